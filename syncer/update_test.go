package syncer

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/gpuvc/gpuvc/api/contract"
)

// admitted returns a pod as the create chain leaves it.
func admitted(t *testing.T, p *corev1.Pod) *corev1.Pod {
	t.Helper()
	in := input(p)
	if r := createChain(in.Role).Run(in); r.Denied() {
		t.Fatalf("pod refused: %s", r.Message())
	}
	return in.Pod
}

func TestUpdateChain(t *testing.T) {
	cases := map[string]struct {
		edit        func(p *corev1.Pod)
		trusted     bool
		check       func(t *testing.T, p *corev1.Pod)
		wantReasons []string
	}{
		"vCluster label change passes untouched": {
			edit:  func(p *corev1.Pod) { p.Labels["app"] = "v2" },
			check: func(t *testing.T, p *corev1.Pod) { eq(t, "v2", p.Labels["app"]) },
		},
		"removing the gate is undone": {
			edit:        func(p *corev1.Pod) { p.Spec.SchedulingGates = nil },
			check:       func(t *testing.T, p *corev1.Pod) { eq(t, 1, len(p.Spec.SchedulingGates)) },
			wantReasons: []string{ReasonShareGateRestored},
		},
		"the share controller removes the gate": {
			edit: func(p *corev1.Pod) { p.Spec.SchedulingGates = nil }, trusted: true,
			check: func(t *testing.T, p *corev1.Pod) { eq(t, 0, len(p.Spec.SchedulingGates)) },
		},
		"forged share annotations are restored": {
			edit: func(p *corev1.Pod) {
				p.Annotations[contract.AnnotationGPUFraction] = "0.99"
				p.Annotations[contract.AnnotationShareConfigMap] = "gpuvc-share-victim"
				p.Labels["gpuvc.dev/extra"] = "x"
				delete(p.Labels, contract.LabelTeam)
			},
			check: func(t *testing.T, p *corev1.Pod) {
				eq(t, "0.5", p.Annotations[contract.AnnotationGPUFraction])
				eq(t, "gpuvc-share-p", p.Annotations[contract.AnnotationShareConfigMap])
				eq(t, "fraud", p.Labels[contract.LabelTeam])
				eq(t, "", p.Labels["gpuvc.dev/extra"])
			},
			wantReasons: []string{ReasonReservedMetadataRestored},
		},
		"added foreign toleration is removed": {
			edit: func(p *corev1.Pod) {
				p.Spec.Tolerations = append(p.Spec.Tolerations, poolToleration("h100"), corev1.Toleration{Operator: corev1.TolerationOpExists})
			},
			check:       func(t *testing.T, p *corev1.Pod) { eq(t, 1, len(p.Spec.Tolerations)) },
			wantReasons: []string{ReasonTolerationRemoved},
		},
		"removed pool toleration is restored": {
			edit:        func(p *corev1.Pod) { p.Spec.Tolerations = nil },
			check:       func(t *testing.T, p *corev1.Pod) { eq(t, "a100", p.Spec.Tolerations[0].Value) },
			wantReasons: []string{ReasonTolerationRestored},
		},
		"pool selector change is restored": {
			edit:        func(p *corev1.Pod) { p.Spec.NodeSelector[contract.LabelPool] = "h100" },
			check:       func(t *testing.T, p *corev1.Pod) { eq(t, "a100", p.Spec.NodeSelector[contract.LabelPool]) },
			wantReasons: []string{ReasonPoolSelectorRestored},
		},
		"queue label is restored": {
			edit:        func(p *corev1.Pod) { p.Labels[contract.LabelKAIQueue] = "payments" },
			check:       func(t *testing.T, p *corev1.Pod) { eq(t, "", p.Labels[contract.LabelKAIQueue]) },
			wantReasons: []string{ReasonQueueSet},
		},
		"tenant's fraction change after creation is ignored": {
			edit:  func(p *corev1.Pod) { p.Annotations[contract.AnnotationKAIFraction] = "0.9" },
			check: func(t *testing.T, p *corev1.Pod) { eq(t, "0.5", p.Annotations[contract.AnnotationGPUFraction]) },
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			old := admitted(t, pod().GPUFraction("0.5").Label("app", "v1").Obj())
			in := input(old.DeepCopy())
			in.Old, in.Role, in.Trusted = old, storedRole(old), tc.trusted
			tc.edit(in.Pod)
			r := podUpdate.Run(in)
			if r.Denied() {
				t.Fatalf("update refused: %s", r.Message())
			}
			tc.check(t, in.Pod)
			if diff := cmp.Diff(tc.wantReasons, reasonsOf(r.Notes)); diff != "" {
				t.Errorf("notes (-want +got):\n%s", diff)
			}
			if v := podUpdate.Verify(in); v.Denied() {
				t.Errorf("the restored update is refused by the validating chain: %s", v.Message())
			}
		})
	}
}

func TestUpdateAffinityWhileGated(t *testing.T) {
	old := admitted(t, pod().GPUFraction("0.5").Obj())
	for node, wantDenied := range map[string]bool{"a100-0": false, "h100-0": true} {
		in := input(old.DeepCopy())
		in.Old, in.Trusted = old, true
		in.Pod.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{node}}}}},
		}}}
		if got := podUpdate.Run(in).Denied(); got != wantDenied {
			t.Errorf("pinning the gated pod to %s: denied=%v, want %v", node, got, wantDenied)
		}
	}
}

func TestReservationRecordsItsGPUOnce(t *testing.T) {
	reservation := func() *corev1.Pod {
		in := input(pod().GPUs("1").Label(contract.LabelRole, contract.RoleReservation).Obj())
		in.Trusted = true
		if r := createChain(in.Role).Run(in); r.Denied() {
			t.Fatalf("reservation refused: %s", r.Message())
		}
		return in.Pod
	}
	update := func(old *corev1.Pod, writer bool, edit func(*corev1.Pod)) *corev1.Pod {
		p := old.DeepCopy()
		edit(p)
		in := input(p)
		in.Old, in.ReserveWriter = old, writer
		podUpdate.Run(in)
		return in.Pod
	}
	setUUID := func(u string) func(*corev1.Pod) {
		return func(p *corev1.Pod) {
			if p.Annotations == nil {
				p.Annotations = map[string]string{}
			}
			p.Annotations[contract.AnnotationGPUUUID] = u
		}
	}
	old := reservation()
	got := update(old, true, setUUID("GPU-1"))
	eq(t, "GPU-1", got.Annotations[contract.AnnotationGPUUUID])

	// Once recorded, it cannot be changed, and nobody else may record it.
	got.Labels, got.Annotations = old.Labels, map[string]string{contract.AnnotationGPUUUID: "GPU-1"}
	eq(t, "GPU-1", update(got, true, setUUID("GPU-2")).Annotations[contract.AnnotationGPUUUID])
	eq(t, "", update(old, false, setUUID("GPU-3")).Annotations[contract.AnnotationGPUUUID])
	// A workload cannot be given a UUID by the reservation account.
	eq(t, "", update(admitted(t, pod().Obj()), true, setUUID("GPU-4")).Annotations[contract.AnnotationGPUUUID])
}

func TestReservationKeepsItsWholeGPU(t *testing.T) {
	in := input(pod().GPUs("1").Label(contract.LabelRole, contract.RoleReservation).Obj())
	in.Trusted = true
	in.Policy.WholeGPUAs = "3g.40gb"
	in.Policy.AllowedMIGProfiles = []string{"3g.40gb"}
	if r := createChain(in.Role).Run(in); r.Denied() {
		t.Fatalf("reservation refused: %s", r.Message())
	}
	q := in.Pod.Spec.Containers[0].Resources.Limits[contract.ResourceGPU]
	eq(t, int64(1), q.Value())
}
