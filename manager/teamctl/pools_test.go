package teamctl_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuvc/gpuvc/api/contract"
	"github.com/gpuvc/gpuvc/manager/teamctl"
)

func TestRuntimeWarnings(t *testing.T) {
	unsafe := corev1.NodeCondition{Type: contract.ConditionGPURuntimeSafe, Status: corev1.ConditionFalse, Reason: "EnvvarAcceptedByDefault",
		Message: "/etc/nvidia-container-runtime/config.toml does not set accept-nvidia-visible-devices-envvar-when-unprivileged, whose default is true: the runtime gives an unprivileged container the GPUs it names; set ... . Fenced: tainted"}
	node := func(name string, cond *corev1.NodeCondition, tainted bool) corev1.Node {
		n := corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
		n.Spec.Taints = []corev1.Taint{{Key: contract.LabelPool, Value: "h100", Effect: corev1.TaintEffectNoSchedule}}
		if tainted {
			n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: contract.TaintGPURuntimeUnsafe, Value: "true", Effect: corev1.TaintEffectNoSchedule})
		}
		if cond != nil {
			n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}, *cond}
		}
		return n
	}
	safe := unsafe
	safe.Status, safe.Reason = corev1.ConditionTrue, "EnvvarIgnoredWhenUnprivileged"
	got := teamctl.RuntimeWarnings("h100", []corev1.Node{
		node("h100-0", &unsafe, true),
		node("h100-1", &unsafe, false),
		node("h100-2", &safe, false),
		node("h100-3", nil, false), // no agent (yet): nothing to say
	})
	why := "(EnvvarAcceptedByDefault: /etc/nvidia-container-runtime/config.toml does not set accept-nvidia-visible-devices-envvar-when-unprivileged, whose default is true: the runtime gives an unprivileged container the GPUs it names)"
	want := []string{
		"node h100-0 of pool h100 is fenced by the gpuvc agent (taint gpuvc.dev/gpu-runtime-unsafe: no new pods of the team are placed there): its GPU container runtime would give a pod the GPUs it names in NVIDIA_VISIBLE_DEVICES " + why + "; the platform must fix the node (docs/platform-guide.md)",
		"node h100-1 of pool h100 is reported unsafe by the gpuvc agent (warn only: not fenced, the team's pods may still run there): its GPU container runtime would give a pod the GPUs it names in NVIDIA_VISIBLE_DEVICES " + why + "; the platform must fix the node (docs/platform-guide.md)",
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
}
