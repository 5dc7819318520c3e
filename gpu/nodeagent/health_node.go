package nodeagent

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/gpuvc/gpuvc/api/contract"
	"github.com/gpuvc/gpuvc/gpu/health"
)

// Event reasons on the Node and on evicted pods.
const (
	ReasonGPUUnhealthy = "GPUUnhealthy"
	ReasonNodeTainted  = "GPUUnhealthyTainted"
	ReasonNodeCordoned = "GPUUnhealthyCordoned"
	ReasonEvicted      = "GPUUnhealthyEvicted"
	ReasonEvictFailed  = "GPUUnhealthyEvictionFailed"
)

const eventAction = "GPUHealth"

// condition is the GPUHealthy condition for the failed GPUs.
func condition(failed []health.Event, total int) (status corev1.ConditionStatus, reason, message string) {
	if len(failed) == 0 {
		return corev1.ConditionTrue, "AllGPUsHealthy", fmt.Sprintf("all %d GPUs healthy (no critical XID, double-bit ECC error or lost GPU seen since the agent started)", total)
	}
	reason = string(failed[0].Kind)
	for _, e := range failed[1:] {
		if string(e.Kind) != reason {
			reason = "GPUsFailed"
		}
	}
	return corev1.ConditionFalse, reason, summary(failed, total)
}

// applyStatus puts the condition (a status patch) and the annotation
// (server-side apply) on the node with field manager HealthFieldManager, writing only what changed, announces newly
// failed GPUs and returns the node as read.
func (h *Health) applyStatus(ctx context.Context, failed []health.Event) (*corev1.Node, error) {
	nodes := h.Client.CoreV1().Nodes()
	node, err := nodes.Get(ctx, h.NodeName, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("reading node %q: %w", h.NodeName, err)
	}
	status, reason, message := condition(failed, h.GPUs)
	var have *corev1.NodeCondition
	for i := range node.Status.Conditions {
		if node.Status.Conditions[i].Type == contract.ConditionGPUHealthy {
			have = &node.Status.Conditions[i]
		}
	}
	if have == nil || have.Status != status || have.Reason != reason || have.Message != message {
		transition := metav1.Now()
		if have != nil && have.Status == status {
			transition = have.LastTransitionTime
		}
		// A strategic merge patch: conditions merge by type, so the kubelet's
		// conditions are untouched.
		patch, err := json.Marshal(map[string]any{"status": map[string]any{"conditions": []corev1.NodeCondition{{
			Type: contract.ConditionGPUHealthy, Status: status, Reason: reason, Message: message,
			LastTransitionTime: transition, LastHeartbeatTime: metav1.Now(),
		}}}})
		if err != nil {
			return nil, err
		}
		if node, err = nodes.Patch(ctx, h.NodeName, types.StrategicMergePatchType, patch, metav1.PatchOptions{FieldManager: HealthFieldManager}, "status"); err != nil {
			return nil, fmt.Errorf("setting condition %s on node %q: %w", contract.ConditionGPUHealthy, h.NodeName, err)
		}
	}
	want := strings.Join(uuids(failed), ",")
	if got, ok := node.Annotations[contract.AnnotationUnhealthyGPUs]; got != want || (want == "" && ok) {
		ac := corev1ac.Node(h.NodeName)
		if want != "" {
			ac.WithAnnotations(map[string]string{contract.AnnotationUnhealthyGPUs: want})
		}
		if node, err = nodes.Apply(ctx, ac, metav1.ApplyOptions{FieldManager: HealthFieldManager, Force: true}); err != nil {
			return nil, fmt.Errorf("annotating node %q with its unhealthy GPUs: %w", h.NodeName, err)
		}
	}
	h.announce(node, failed)
	return node, nil
}

// announce records one GPUUnhealthy event per newly failed GPU.
func (h *Health) announce(node *corev1.Node, failed []health.Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.announced == nil {
		h.announced = map[string]bool{}
	}
	for _, e := range failed {
		if h.announced[e.UUID] {
			continue
		}
		h.announced[e.UUID] = true
		h.event(node, corev1.EventTypeWarning, ReasonGPUUnhealthy, "%s: marked unhealthy (device plugin, condition %s=False, annotation %s); policy %s",
			e, contract.ConditionGPUHealthy, contract.AnnotationUnhealthyGPUs, h.Policy)
	}
}

func (h *Health) event(regarding *corev1.Node, kind, reason, note string, args ...any) {
	if h.Recorder != nil {
		h.Recorder.Eventf(regarding, nil, kind, reason, eventAction, note, args...)
	}
}

// gpuTaint is the taint a node with a failed GPU carries.
func gpuTaint() corev1.Taint {
	return corev1.Taint{Key: contract.TaintGPUUnhealthy, Value: "true", Effect: corev1.TaintEffectNoSchedule}
}

// taint adds the NoSchedule taint (and, with cordon-drain, cordons) unless
// the node already has it. Taints are an atomic list: the patch carries the
// node's resourceVersion, so a concurrent change of taints is never lost (the
// next enforcement reads again).
func (h *Health) taint(ctx context.Context, node *corev1.Node, failed []health.Event) error {
	hasTaint := slices.ContainsFunc(node.Spec.Taints, func(t corev1.Taint) bool { return t.Key == contract.TaintGPUUnhealthy })
	cordon := h.Policy == HealthCordonDrain && !node.Spec.Unschedulable
	if hasTaint && !cordon {
		return nil
	}
	taints := node.Spec.Taints
	if !hasTaint {
		taints = append(slices.Clone(taints), gpuTaint())
	}
	spec := map[string]any{"taints": taints}
	if cordon {
		spec["unschedulable"] = true
	}
	if err := h.patchSpec(ctx, node, spec); err != nil {
		return fmt.Errorf("tainting node %q: %w", h.NodeName, err)
	}
	h.Metrics.action(h.NodeName, "taint")
	h.event(node, corev1.EventTypeWarning, ReasonNodeTainted, "tainted %s=true:NoSchedule: %s", contract.TaintGPUUnhealthy, summary(failed, h.GPUs))
	if cordon {
		h.Metrics.action(h.NodeName, "cordon")
		h.event(node, corev1.EventTypeWarning, ReasonNodeCordoned, "cordoned: %s", summary(failed, h.GPUs))
	}
	return nil
}

// untaint removes the agent's taint from a node whose GPUs are all healthy (the
// agent restarted after the GPU was reset or replaced). A cordon stays: an
// operator may have cordoned for other reasons; `kubectl uncordon` ends it.
func (h *Health) untaint(ctx context.Context, node *corev1.Node) error {
	taints := slices.DeleteFunc(slices.Clone(node.Spec.Taints), func(t corev1.Taint) bool { return t.Key == contract.TaintGPUUnhealthy })
	if len(taints) == len(node.Spec.Taints) {
		return nil
	}
	if err := h.patchSpec(ctx, node, map[string]any{"taints": taints}); err != nil {
		return fmt.Errorf("removing taint %s from node %q: %w", contract.TaintGPUUnhealthy, h.NodeName, err)
	}
	return nil
}

// patchSpec merge-patches the node's spec, conditional on the resourceVersion
// read.
func (h *Health) patchSpec(ctx context.Context, node *corev1.Node, spec map[string]any) error {
	return patchNodeSpec(ctx, h.Client, node, spec, HealthFieldManager)
}

// patchNodeSpec merge-patches node's spec, conditional on its resourceVersion
// (taints are an atomic list: a concurrent change is never lost).
func patchNodeSpec(ctx context.Context, client kubernetes.Interface, node *corev1.Node, spec map[string]any, fieldManager string) error {
	patch, err := json.Marshal(map[string]any{
		"metadata": map[string]any{"resourceVersion": node.ResourceVersion},
		"spec":     spec,
	})
	if err != nil {
		return err
	}
	_, err = client.CoreV1().Nodes().Patch(ctx, node.Name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: fieldManager})
	return err
}
