package suite

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gpuvc/gpuvc/manager/api/contract"
)

// TestHealthTaintTolerationOnTheRealNode (issue 22, class 1): a tenant's pod
// that tolerates the taint gpuvc's health reaction puts on a node with a
// failing GPU never lands on that node. Through the team's own kubeconfig and
// the real vCluster: the host pod arrives without the toleration (the team sees
// TolerationRemoved), the scheduler leaves it Unschedulable for that taint
// while the node carries it, and it runs there once the taint is gone — the
// taint alone kept it off.
func TestHealthTaintTolerationOnTheRealNode(t *testing.T) {
	ctx := e2e(t)
	needsRunningContainers(t)
	createTeam(ctx, t, "tolerant", "--pool", realPool, "--gpus", "1")
	vc := teamClient(t, teamKubeconfig(t, "tolerant"))

	// The agent's taint (gpu/nodeagent: gpuvc.dev/gpu-unhealthy=true:NoSchedule).
	// NoSchedule: the node's running pods (the vCluster control planes, the
	// manager) stay.
	taint := corev1.Taint{Key: contract.TaintGPUUnhealthy, Value: "true", Effect: corev1.TaintEffectNoSchedule}
	setNodeTaints(ctx, t, func(taints []corev1.Taint) []corev1.Taint { return append(taints, taint) })
	untainted := false
	untaint := func() {
		if !untainted {
			untainted = true
			setNodeTaints(context.WithoutCancel(ctx), t, func(taints []corev1.Taint) []corev1.Taint {
				return slices.DeleteFunc(taints, func(x corev1.Taint) bool { return x.Key == taint.Key })
			})
		}
	}
	t.Cleanup(untaint)

	pod := workload("sick", "sleep 3600").GPUs("1").
		Toleration(corev1.Toleration{Key: contract.TaintGPUUnhealthy, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}).Obj()
	host, err := submitVirtualPod(ctx, t, "tolerant", pod)
	require.NoError(t, err)
	for _, tol := range host.Spec.Tolerations {
		require.NotEqual(t, contract.TaintGPUUnhealthy, tol.Key, "the tenant's toleration of the health taint reached the host pod: %+v", host.Spec.Tolerations)
	}
	hosts := backend.Client().CoreV1().Pods(host.Namespace)
	eventually(ctx, t, "the scheduler leaves "+host.Name+" off the tainted node", func(ctx context.Context) (bool, string) {
		p, err := hosts.Get(ctx, host.Name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		if p.Spec.NodeName != "" {
			t.Fatalf("the pod was bound to %s while it carries %s", p.Spec.NodeName, contract.TaintGPUUnhealthy)
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable &&
				strings.Contains(c.Message, "untolerated taint") && strings.Contains(c.Message, contract.TaintGPUUnhealthy) {
				return true, ""
			}
		}
		return false, fmt.Sprintf("conditions %v", p.Status.Conditions)
	})
	eventually(ctx, t, "TolerationRemoved event in the virtual cluster", func(ctx context.Context) (bool, string) {
		events, err := vc.CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + pod.Name})
		if err != nil {
			return false, err.Error()
		}
		var reasons []string
		for _, e := range events.Items {
			if e.Reason == "TolerationRemoved" && strings.Contains(e.Message, contract.TaintGPUUnhealthy) {
				return true, ""
			}
			reasons = append(reasons, e.Reason)
		}
		return false, fmt.Sprint(reasons)
	})

	untaint()
	v := waitVirtualPod(ctx, t, vc, pod.Name, running)
	h, err := hosts.Get(ctx, host.Name, metav1.GetOptions{})
	require.NoError(t, err)
	require.Equal(t, realNodeName, h.Spec.NodeName, "virtual pod %s", v.Name)
}

// setNodeTaints rewrites the real node's taints with a JSON merge patch
// carrying its resourceVersion (taints are an atomic list), retrying on
// conflict.
func setNodeTaints(ctx context.Context, t *testing.T, edit func([]corev1.Taint) []corev1.Taint) {
	t.Helper()
	nodes := backend.Client().CoreV1().Nodes()
	eventually(ctx, t, "taints of "+realNodeName+" written", func(ctx context.Context) (bool, string) {
		n, err := nodes.Get(ctx, realNodeName, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		taints := edit(slices.Clone(n.Spec.Taints))
		if taints == nil {
			taints = []corev1.Taint{}
		}
		patch, err := json.Marshal(map[string]any{
			"metadata": map[string]any{"resourceVersion": n.ResourceVersion},
			"spec":     map[string]any{"taints": taints},
		})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := nodes.Patch(ctx, realNodeName, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			return false, err.Error()
		}
		return true, ""
	})
}
