package syncer

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/gpuvc/gpuvc/api/contract"
)

// tenantPods is a corpus of pods the create chain admits (with changes).
func tenantPods() map[string]*corev1.Pod {
	return map[string]*corev1.Pod{
		"cpu only":             pod().Obj(),
		"whole GPU":            pod().GPUs("1").Obj(),
		"MIG":                  pod().MIG("1g.10gb", "2").Obj(),
		"NVL MIG profile":      pod().MIG("1g.12gb", "1").Obj(),
		"fraction":             pod().GPUFraction("0.25").Container("second").Obj(),
		"memory share":         pod().GPUMemory("10000").Obj(),
		"foreign toleration":   pod().GPUs("1").TolerateTaint(contract.LabelPool, "h100").NodeSelector(contract.LabelPool, "h100").Obj(),
		"wildcard toleration":  pod().TolerateEverything().Obj(),
		"foreign scheduler":    pod().SchedulerName("evil").PriorityClass("system-node-critical").Obj(),
		"forged reserved keys": pod().Label(contract.LabelGPUShare, "true").Annotation(contract.AnnotationRole, contract.RoleControlPlane).Obj(),
		"kai queue":            pod().Label(contract.LabelKAIQueue, "payments").Obj(),
	}
}

// TestCreateThenVerify: whatever the mutating chain admits, the validating chain
// accepts unchanged (the fixed point the validating webhook relies on).
func TestCreateThenVerify(t *testing.T) {
	for name, p := range tenantPods() {
		t.Run(name, func(t *testing.T) {
			in := input(p)
			r := createChain(in.Role).Run(in)
			if r.Denied() {
				t.Fatalf("refused: %s", r.Message())
			}
			if v := createChain(in.Role).Verify(in); v.Denied() {
				t.Fatalf("validating chain refuses what the mutating chain produced: %s", v.Message())
			}
		})
	}
}

// TestVerifyCatchesLaterChanges: a change made after the mutating webhook is
// refused by the validating chain, which names it.
func TestVerifyCatchesLaterChanges(t *testing.T) {
	cases := map[string]struct {
		tamper func(p *corev1.Pod)
		says   string
	}{
		"foreign toleration added": {func(p *corev1.Pod) { p.Spec.Tolerations = append(p.Spec.Tolerations, poolToleration("h100")) }, ReasonTolerationRemoved},
		"pool selector dropped":    {func(p *corev1.Pod) { delete(p.Spec.NodeSelector, contract.LabelPool) }, ReasonPoolPinned},
		"gate dropped":             {func(p *corev1.Pod) { p.Spec.SchedulingGates = nil }, ReasonGPUShareGated},
		"scheduler changed":        {func(p *corev1.Pod) { p.Spec.SchedulerName = "evil" }, ReasonSchedulerNameReplaced},
		"GPU added to a share pod": {func(p *corev1.Pod) { p.Spec.Containers[0].Resources.Limits[contract.ResourceGPU] = mustQty("1") }, ReasonShareWithGPUResource},
		"privileged sidecar": {func(p *corev1.Pod) {
			p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: "s", SecurityContext: &corev1.SecurityContext{Privileged: ptrTrue()}})
		}, ReasonPrivileged},
		"reserved label forged": {func(p *corev1.Pod) { p.Labels["gpuvc.dev/reservation"] = "x" }, ReasonReservedMetadataRemoved},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p := admitted(t, pod().GPUFraction("0.5").Obj())
			tc.tamper(p)
			v := createChain(contract.RoleWorkload).Verify(input(p))
			if !v.Denied() {
				t.Fatal("tampered pod accepted")
			}
			if !strings.Contains(v.Message(), tc.says) {
				t.Errorf("message %q does not name %s", v.Message(), tc.says)
			}
		})
	}
}

func TestChainCollectsAllRefusals(t *testing.T) {
	in := input(pod().Privileged().HostNetwork().GPUs("9").Obj())
	r := createChain(contract.RoleWorkload).Run(in)
	want := []string{ReasonPrivileged, ReasonHostNamespace, ReasonGPUCountAboveLimit}
	if diff := cmp.Diff(want, denialReasons(r)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if !strings.HasPrefix(r.Message(), "gpuvc: PrivilegedContainer: ") {
		t.Errorf("message %q", r.Message())
	}
	if len(r.Notes) > 0 {
		t.Errorf("a refused pod must not be mutated, got notes %v", reasonsOf(r.Notes))
	}
}
