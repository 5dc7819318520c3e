package team_test

import (
	"context"
	"encoding/json"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gpuvc/gpuvc/api/contract"
)

// TestGetWarnsAboutAFencedNode: a node of the team's pool that the agent fenced
// for its GPU container runtime (condition GPURuntimeSafe=False, its taint) is
// named by `team get`, with the agent's reason; the other pool's team hears
// nothing.
func TestGetWarnsAboutAFencedNode(t *testing.T) {
	ctx := integration(t)
	dir := t.TempDir()
	t.Cleanup(func() { gpuvc(t, "team", "delete", "lab", "ads", "--wait", "--timeout", "1m") })
	r := gpuvc(t, "team", "apply", "-f", writeFile(t, dir, "teams.yaml", twoTeams))
	require.Equal(t, 0, r.code, r.errOut)

	// Play the agent on h100-0.
	nodes := host.Client.CoreV1().Nodes()
	node, err := nodes.Get(ctx, "h100-0", metav1.GetOptions{})
	require.NoError(t, err)
	taints := append(slices.Clone(node.Spec.Taints), corev1.Taint{Key: contract.TaintGPURuntimeUnsafe, Value: "true", Effect: corev1.TaintEffectNoSchedule})
	patch, _ := json.Marshal(map[string]any{"spec": map[string]any{"taints": taints}})
	_, err = nodes.Patch(ctx, "h100-0", types.MergePatchType, patch, metav1.PatchOptions{})
	require.NoError(t, err)
	status, _ := json.Marshal(map[string]any{"status": map[string]any{"conditions": []corev1.NodeCondition{{
		Type: contract.ConditionGPURuntimeSafe, Status: corev1.ConditionFalse, Reason: "EnvvarAcceptedByDefault",
		Message: "/etc/nvidia-container-runtime/config.toml does not set accept-nvidia-visible-devices-envvar-when-unprivileged, whose default is true: the runtime gives an unprivileged container the GPUs it names; set it to false",
	}}}})
	_, err = nodes.Patch(ctx, "h100-0", types.StrategicMergePatchType, status, metav1.PatchOptions{}, "status")
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx := context.Background()
		patch, _ := json.Marshal(map[string]any{"spec": map[string]any{"taints": node.Spec.Taints}})
		if _, err := nodes.Patch(ctx, "h100-0", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			t.Error(err)
		}
		status, _ := json.Marshal(map[string]any{"status": map[string]any{"conditions": []map[string]any{{"type": contract.ConditionGPURuntimeSafe, "$patch": "delete"}}}})
		if _, err := nodes.Patch(ctx, "h100-0", types.StrategicMergePatchType, status, metav1.PatchOptions{}, "status"); err != nil {
			t.Error(err)
		}
	})

	r = gpuvc(t, "team", "get", "ads")
	require.Equal(t, 0, r.code, r.errOut)
	require.Contains(t, r.errOut, "warning: team ads: node h100-0 of pool h100 is fenced by the gpuvc agent (taint gpuvc.dev/gpu-runtime-unsafe: no new pods of the team are placed there)")
	require.Contains(t, r.errOut, "(EnvvarAcceptedByDefault: /etc/nvidia-container-runtime/config.toml does not set accept-nvidia-visible-devices-envvar-when-unprivileged, whose default is true: the runtime gives an unprivileged container the GPUs it names)")
	r = gpuvc(t, "team", "get", "lab")
	require.Equal(t, 0, r.code, r.errOut)
	require.NotContains(t, r.errOut, "h100-0")
}
