package syncer

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/gpuvc/gpuvc/api/contract"
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

func TestQueuedPodIsGatedByGPUVC(t *testing.T) {
	in := input(pod().GPUs("1").Obj())
	in.Policy.KueueQueue = contract.KueueLocalQueueName
	notes := append(mutateKueueQueue(in), mutateKueueGate(in)...)
	if !hasKueueGate(in.Pod) {
		t.Fatalf("a queueing team's GPU pod was not gated: %v", in.Pod.Spec.SchedulingGates)
	}
	if diff := cmp.Diff([]string{ReasonKueueQueueSet, ReasonKueueGated}, reasonsOf(notes)); diff != "" {
		t.Errorf("notes (-want +got):\n%s", diff)
	}
	// Kueue's webhook after gpuvc's finds the gate and adds none; gpuvc's
	// validating pass finds nothing to change.
	eq(t, 0, len(mutateKueueGate(in)))
	eq(t, 1, len(in.Pod.Spec.SchedulingGates))

	cpu := input(pod().Obj())
	cpu.Policy.KueueQueue = contract.KueueLocalQueueName
	if mutateKueueGate(cpu); hasKueueGate(cpu.Pod) {
		t.Fatal("a CPU pod, which does not queue, was gated")
	}
}

// TestOnlyKueueLiftsItsGate: anyone but Kueue removing the admission gate is
// refused, naming the gate and the limit; the team's vCluster, which sends the
// virtual pod's gates with every update, gets the gate put back instead.
func TestOnlyKueueLiftsItsGate(t *testing.T) {
	old := pod().GPUs("1").Label(contract.LabelKueueQueueName, contract.KueueLocalQueueName).SchedulingGate(contract.KueueAdmissionGate).Obj()
	ungated := old.DeepCopy()
	ungated.Spec.SchedulingGates = nil
	relabelled := old.DeepCopy()
	relabelled.Labels["app"] = "x"
	for name, tc := range map[string]struct {
		pod          *corev1.Pod
		who          func(*Input)
		wantDenied   string
		wantGated    bool
		wantRestored bool
	}{
		"Kueue lifts it":                         {pod: ungated, who: func(in *Input) { in.Kueue = true }},
		"the team's identity is refused":         {pod: ungated, wantDenied: ReasonKueueGateRemoved, wantGated: false},
		"a gpuvc component is refused":           {pod: ungated, who: func(in *Input) { in.Trusted = true }, wantDenied: ReasonKueueGateRemoved},
		"the vCluster syncer gets the gate back": {pod: ungated, who: func(in *Input) { in.VClusterSyncer = true }, wantGated: true, wantRestored: true},
		"an update keeping the gate passes":      {pod: relabelled, wantGated: true},
		"the vCluster syncer keeping the gate":   {pod: relabelled, who: func(in *Input) { in.VClusterSyncer = true }, wantGated: true},
		"a gate on a pod that never queued":      {pod: ungated, who: func(in *Input) { delete(in.Old.Labels, contract.LabelKueueQueueName) }},
	} {
		t.Run(name, func(t *testing.T) {
			in := input(tc.pod.DeepCopy())
			in.Old = old.DeepCopy()
			if tc.who != nil {
				tc.who(in)
			}
			r := podUpdate.Run(in)
			if diff := cmp.Diff(nonEmpty(tc.wantDenied), denialReasons(r)); diff != "" {
				t.Fatalf("denials (-want +got):\n%s", diff)
			}
			if r.Denied() {
				if m := r.Message(); !contains(m, contract.KueueAdmissionGate) || !contains(m, "only Kueue lifts it") || !contains(m, "team fraud") {
					t.Errorf("refusal %q does not name the gate, the limit and the team", m)
				}
				return
			}
			eq(t, tc.wantGated, hasKueueGate(in.Pod))
			eq(t, tc.wantRestored, contains(strings.Join(reasonsOf(r.Notes), ","), ReasonKueueGateRestored))
			if v := podUpdate.Verify(in); v.Denied() {
				t.Errorf("the validating pass refused what the mutating pass let through: %s", v.Message())
			}
		})
	}
}

func nonEmpty(s string) []string {
	if s == "" {
		return nil
	}
	return []string{s}
}

// TestQueueDepth: a queueing team's pod beyond ceiling + queue depth is refused
// naming the figures and the field to raise; within, or without a known usage,
// it passes (the ResourceQuota stays the fence).
func TestQueueDepth(t *testing.T) {
	queueing := func(used int64) func(*Input) {
		return func(in *Input) {
			in.Policy.KueueQueue = contract.KueueLocalQueueName
			in.Policy.KueueCeiling = map[corev1.ResourceName]int64{contract.ResourceGPU: 2, "nvidia.com/mig-1g.10gb": 1}
			in.Policy.KueueMaxQueued = map[corev1.ResourceName]int64{contract.ResourceGPU: 2, "nvidia.com/mig-1g.10gb": 0}
			in.QuotaUsed = map[corev1.ResourceName]int64{contract.ResourceGPU: used}
		}
	}
	runCheckTable(t, checkQueueDepth, map[string]checkCase{
		"room in the queue":    {pod: pod().GPUs("1").Obj(), edit: queueing(3)},
		"the last queue place": {pod: pod().GPUs("2").Obj(), edit: queueing(2)},
		"beyond the queue depth": {pod: pod().GPUs("1").Obj(), edit: queueing(4), reason: ReasonQueueFull,
			says: []string{"team fraud", "already hold 4 nvidia.com/gpu", "asks for 1", "limit: 4 = 2", "+ 2 that may wait", "spec.queueing.maxQueued"}},
		"a MIG profile at its ceiling, depth 0": {pod: pod().MIG("1g.10gb", "1").Obj(), edit: func(in *Input) {
			queueing(0)(in)
			in.QuotaUsed["nvidia.com/mig-1g.10gb"] = 1
		}, reason: ReasonQueueFull, says: []string{"nvidia.com/mig-1g.10gb", "limit: 1 = 1"}},
		"usage unknown": {pod: pod().GPUs("9").Obj(), edit: func(in *Input) { queueing(0)(in); in.QuotaUsed = nil }},
		"not queueing":  {pod: pod().GPUs("9").Obj(), edit: func(in *Input) { in.QuotaUsed = map[corev1.ResourceName]int64{contract.ResourceGPU: 100} }},
	})
}
