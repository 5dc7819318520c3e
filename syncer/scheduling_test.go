package syncer

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	"github.com/gpuvc/gpuvc/api/contract"
)

func TestSchedulingMutations(t *testing.T) {
	cases := map[string]struct {
		pod         *corev1.Pod
		policy      func(*TeamPolicy)
		check       func(t *testing.T, s corev1.PodSpec, labels map[string]string)
		wantReasons []string
	}{
		"foreign scheduler replaced": {
			pod: pod().SchedulerName("my-scheduler").Obj(),
			check: func(t *testing.T, s corev1.PodSpec, _ map[string]string) {
				eq(t, contract.DefaultSchedulerName, s.SchedulerName)
			},
			wantReasons: []string{ReasonSchedulerNameReplaced},
		},
		"team scheduler set": {
			pod: pod().SchedulerName(contract.DefaultSchedulerName).Obj(), policy: func(p *TeamPolicy) { p.SchedulerName = "kai-scheduler" },
			check:       func(t *testing.T, s corev1.PodSpec, _ map[string]string) { eq(t, "kai-scheduler", s.SchedulerName) },
			wantReasons: []string{ReasonSchedulerNameReplaced},
		},
		"priority class not allowed": {
			pod: func() *corev1.Pod {
				p := pod().SchedulerName(contract.DefaultSchedulerName).PriorityClass("system-node-critical").Obj()
				p.Spec.Priority = ptr.To[int32](2000001000)
				p.Spec.PreemptionPolicy = ptr.To(corev1.PreemptLowerPriority)
				return p
			}(),
			check: func(t *testing.T, s corev1.PodSpec, _ map[string]string) {
				eq(t, "", s.PriorityClassName)
				if s.Priority != nil || s.PreemptionPolicy != nil {
					t.Errorf("priority %v / preemption %v left behind", s.Priority, s.PreemptionPolicy)
				}
			},
			wantReasons: []string{ReasonPriorityClassRemoved},
		},
		"priority class allowed": {
			pod: pod().SchedulerName(contract.DefaultSchedulerName).PriorityClass("team-high").Obj(), policy: func(p *TeamPolicy) { p.AllowedPriorityClasses = []string{"team-high"} },
			check: func(t *testing.T, s corev1.PodSpec, _ map[string]string) { eq(t, "team-high", s.PriorityClassName) },
		},
		"runtime class not allowed": {
			pod: func() *corev1.Pod {
				p := pod().SchedulerName(contract.DefaultSchedulerName).RuntimeClass("kata").Obj()
				p.Spec.Overhead = corev1.ResourceList{"cpu": resource.MustParse("100m")}
				return p
			}(),
			check: func(t *testing.T, s corev1.PodSpec, _ map[string]string) {
				if s.RuntimeClassName != nil || s.Overhead != nil {
					t.Errorf("runtime class %v / overhead %v left behind", s.RuntimeClassName, s.Overhead)
				}
			},
			wantReasons: []string{ReasonRuntimeClassRemoved},
		},
		"queue label of another team removed": {
			pod:         pod().SchedulerName(contract.DefaultSchedulerName).Label(contract.LabelKAIQueue, "payments").Obj(),
			check:       func(t *testing.T, _ corev1.PodSpec, l map[string]string) { eq(t, "", l[contract.LabelKAIQueue]) },
			wantReasons: []string{ReasonQueueSet},
		},
		"queue label replaced by the team's": {
			pod: pod().SchedulerName(contract.DefaultSchedulerName).Label(contract.LabelKAIQueue, "payments").Obj(), policy: func(p *TeamPolicy) { p.Queue = "fraud" },
			check:       func(t *testing.T, _ corev1.PodSpec, l map[string]string) { eq(t, "fraud", l[contract.LabelKAIQueue]) },
			wantReasons: []string{ReasonQueueSet},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			in := input(tc.pod)
			if tc.policy != nil {
				tc.policy(in.Policy)
			}
			var notes []Note
			for _, m := range []Mutation{mutateSchedulerName, mutatePriorityClass, mutateRuntimeClass, mutateQueue} {
				notes = append(notes, m(in)...)
			}
			tc.check(t, in.Pod.Spec, in.Pod.Labels)
			if diff := cmp.Diff(tc.wantReasons, reasonsOf(notes)); diff != "" {
				t.Errorf("notes (-want +got):\n%s", diff)
			}
		})
	}
}

func eq[T comparable](t *testing.T, want, got T) {
	t.Helper()
	if want != got {
		t.Errorf("got %v, want %v", got, want)
	}
}
