package syncer

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/gpuvc/gpuvc/manager/api/contract"
)

func TestKueueQueueLabel(t *testing.T) {
	queueing := func(p *TeamPolicy) { p.KueueQueue = contract.KueueLocalQueueName }
	for name, tc := range map[string]struct {
		pod         *corev1.Pod
		policy      func(*TeamPolicy)
		want        string // the label's value; "" = absent
		wantReasons []string
	}{
		"a queueing team's whole-GPU pod names the team's queue": {
			pod: pod().GPUs("2").Obj(), policy: queueing, want: contract.KueueLocalQueueName, wantReasons: []string{ReasonKueueQueueSet},
		},
		"a queueing team's MIG pod names the team's queue": {
			pod: pod().MIG("1g.10gb", "1").Obj(), policy: queueing, want: contract.KueueLocalQueueName, wantReasons: []string{ReasonKueueQueueSet},
		},
		"a tenant's queue name is replaced by the team's": {
			pod: pod().GPUs("1").Label(contract.LabelKueueQueueName, "other").Obj(), policy: queueing, want: contract.KueueLocalQueueName, wantReasons: []string{ReasonKueueQueueSet},
		},
		"a queueing team's CPU pod does not queue": {
			pod: pod().Obj(), policy: queueing,
		},
		"a CPU pod's tenant-set queue label is removed": {
			pod: pod().Label(contract.LabelKueueQueueName, contract.KueueLocalQueueName).Obj(), policy: queueing, wantReasons: []string{ReasonKueueQueueSet},
		},
		"a team that does not queue: GPU pods carry no queue label": {
			pod: pod().GPUs("1").Label(contract.LabelKueueQueueName, "gpuvc").Obj(), wantReasons: []string{ReasonKueueQueueSet},
		},
	} {
		t.Run(name, func(t *testing.T) {
			in := input(tc.pod)
			if tc.policy != nil {
				tc.policy(in.Policy)
			}
			notes := mutateKueueQueue(in)
			eq(t, tc.want, in.Pod.Labels[contract.LabelKueueQueueName])
			if diff := cmp.Diff(tc.wantReasons, reasonsOf(notes)); diff != "" {
				t.Errorf("notes (-want +got):\n%s", diff)
			}
		})
	}
}

func TestKueueQueueLabelIsKeptThroughUpdates(t *testing.T) {
	old := pod().GPUs("1").Label(contract.LabelKueueQueueName, contract.KueueLocalQueueName).Obj()
	for name, edit := range map[string]func(*corev1.Pod){
		"removed":  func(p *corev1.Pod) { delete(p.Labels, contract.LabelKueueQueueName) },
		"replaced": func(p *corev1.Pod) { p.Labels[contract.LabelKueueQueueName] = "other" },
	} {
		t.Run(name, func(t *testing.T) {
			in := input(old.DeepCopy())
			in.Old = old
			edit(in.Pod)
			notes := mutateRestoreKueueQueue(in)
			eq(t, contract.KueueLocalQueueName, in.Pod.Labels[contract.LabelKueueQueueName])
			eq(t, 1, len(notes))
		})
	}
}
