package syncer

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/gpuvc/gpuvc/api/contract"
)

func TestMutatePoolFence(t *testing.T) {
	ours := poolToleration("a100")
	notReady := corev1.Toleration{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](300)}
	cases := map[string]struct {
		pod             *corev1.Pod
		role            string
		wantSelector    map[string]string
		wantTolerations []corev1.Toleration
		wantReasons     []string
	}{
		"bare pod is pinned": {
			pod:          pod().Obj(),
			wantSelector: map[string]string{contract.LabelPool: "a100"}, wantTolerations: []corev1.Toleration{ours},
			wantReasons: []string{ReasonPoolPinned},
		},
		"already in pool: nothing to do": {
			pod:          pod().InPool("a100").Obj(),
			wantSelector: map[string]string{contract.LabelPool: "a100"}, wantTolerations: []corev1.Toleration{ours},
		},
		"selector to another pool is replaced": {
			pod:          pod().NodeSelector(contract.LabelPool, "h100").NodeSelector("zone", "b").Obj(),
			wantSelector: map[string]string{contract.LabelPool: "a100", "zone": "b"}, wantTolerations: []corev1.Toleration{ours},
			wantReasons: []string{ReasonPoolPinned, ReasonPoolSelectorReplaced},
		},
		"foreign pool toleration is removed, others kept": {
			pod:          pod().TolerateTaint(contract.LabelPool, "h100").Toleration(notReady).Obj(),
			wantSelector: map[string]string{contract.LabelPool: "a100"}, wantTolerations: []corev1.Toleration{notReady, ours},
			wantReasons: []string{ReasonPoolPinned, ReasonTolerationRemoved},
		},
		"wildcard toleration is removed": {
			pod:          pod().TolerateEverything().Obj(),
			wantSelector: map[string]string{contract.LabelPool: "a100"}, wantTolerations: []corev1.Toleration{ours},
			wantReasons: []string{ReasonPoolPinned, ReasonTolerationRemoved},
		},
		"pool key with Exists is removed": {
			pod:          pod().Toleration(corev1.Toleration{Key: contract.LabelPool, Operator: corev1.TolerationOpExists}).Obj(),
			wantSelector: map[string]string{contract.LabelPool: "a100"}, wantTolerations: []corev1.Toleration{ours},
			wantReasons: []string{ReasonPoolPinned, ReasonTolerationRemoved},
		},
		"own pool toleration for all effects is kept": {
			pod:          pod().NodeSelector(contract.LabelPool, "a100").Toleration(corev1.Toleration{Key: contract.LabelPool, Value: "a100"}).Obj(),
			wantSelector: map[string]string{contract.LabelPool: "a100"}, wantTolerations: []corev1.Toleration{{Key: contract.LabelPool, Value: "a100"}},
		},
		"control plane goes to the system pool": {
			pod: pod().TolerateTaint(contract.LabelPool, "a100").Obj(), role: contract.RoleControlPlane,
			wantSelector:    map[string]string{contract.LabelPool: "system"},
			wantTolerations: []corev1.Toleration{poolToleration("system")},
			wantReasons:     []string{ReasonPoolPinned, ReasonTolerationRemoved},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			in := input(tc.pod)
			if tc.role != "" {
				in.Role = tc.role
			}
			notes := mutatePoolFence(in)
			if diff := cmp.Diff(tc.wantSelector, in.Pod.Spec.NodeSelector); diff != "" {
				t.Errorf("nodeSelector (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantTolerations, in.Pod.Spec.Tolerations); diff != "" {
				t.Errorf("tolerations (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantReasons, reasonsOf(notes)); diff != "" {
				t.Errorf("notes (-want +got):\n%s", diff)
			}
			if again := mutatePoolFence(in); len(again) > 0 {
				t.Errorf("not idempotent: second run noted %v", reasonsOf(again))
			}
		})
	}
}

func TestCheckNodeName(t *testing.T) {
	runCheckTable(t, checkNodeName, map[string]checkCase{
		"no nodeName":       {pod: pod().Obj()},
		"node in the pool":  {pod: pod().NodeName("a100-0").Obj()},
		"node of h100":      {pod: pod().NodeName("h100-0").Obj(), reason: ReasonNodeNameOutsidePool, says: []string{"spec.nodeName=h100-0", "in pool h100", "pool a100", "remove spec.nodeName"}},
		"missing node":      {pod: pod().NodeName("ghost").Obj(), reason: ReasonNodeNameOutsidePool, says: []string{"does not exist or belongs to no pool"}},
		"unresolvable node": {pod: pod().NodeName("a100-9").Obj(), reason: ReasonNodeNameOutsidePool, says: []string{"cannot look up"}},
		"control plane on system": {
			pod: pod().NodeName("system-0").Obj(), edit: func(in *Input) { in.Role = contract.RoleControlPlane },
		},
		"unchanged on update": {
			pod: pod().NodeName("h100-0").Obj(), edit: func(in *Input) { in.Old = in.Pod.DeepCopy() },
		},
	})
}

func TestCheckNodeAffinity(t *testing.T) {
	runCheckTable(t, checkNodeAffinity, map[string]checkCase{
		"no affinity":            {pod: pod().Obj()},
		"pool In own":            {pod: pod().RequireNodeLabel(contract.LabelPool, corev1.NodeSelectorOpIn, "a100", "h100").Obj()},
		"pool In h100":           {pod: pod().RequireNodeLabel(contract.LabelPool, corev1.NodeSelectorOpIn, "h100").Obj(), reason: ReasonAffinityOutsidePool, says: []string{"gpuvc.dev/pool In [h100]", "pool a100", "remove that node affinity"}},
		"pool NotIn own":         {pod: pod().RequireNodeLabel(contract.LabelPool, corev1.NodeSelectorOpNotIn, "a100").Obj(), reason: ReasonAffinityOutsidePool},
		"pool DoesNotExist":      {pod: pod().RequireNodeLabel(contract.LabelPool, corev1.NodeSelectorOpDoesNotExist).Obj(), reason: ReasonAffinityOutsidePool},
		"one term reaches pool":  {pod: pod().RequireNodeLabel(contract.LabelPool, corev1.NodeSelectorOpIn, "h100").RequireNodeLabel(contract.LabelPool, corev1.NodeSelectorOpIn, "a100").Obj()},
		"node name in pool":      {pod: pod().RequireNodeNames("a100-0").Obj()},
		"node name of h100":      {pod: pod().RequireNodeNames("h100-0").Obj(), reason: ReasonAffinityOutsidePool, says: []string{"metadata.name In [h100-0]"}},
		"other labels are ANDed": {pod: pod().RequireNodeLabel("kubernetes.io/hostname", corev1.NodeSelectorOpIn, "h100-0").Obj()},
	})
}

func TestReferencedNodes(t *testing.T) {
	p := pod().NodeName("a100-0").RequireNodeNames("h100-0", "a100-0").Obj()
	if diff := cmp.Diff([]string{"a100-0", "h100-0"}, referencedNodes(p)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
