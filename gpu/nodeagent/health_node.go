package nodeagent

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/gpuvc/gpuvc/api/contract"
)

// Event reasons on the Node and on evicted pods.
const (
	ReasonGPUUnhealthy       = "GPUUnhealthy"
	ReasonGPUQuarantined     = "GPUQuarantined"
	ReasonProbationRestarted = "GPUProbationRestarted"
	ReasonGPUReturned        = "GPUReturned"
	ReasonGPUCleared         = "GPUQuarantineCleared"
	ReasonClearInvalid       = "GPUQuarantineClearInvalid"
	ReasonNodeTainted        = "GPUUnhealthyTainted"
	ReasonNodeUntainted      = "GPUUnhealthyUntainted"
	ReasonNodeCordoned       = "GPUUnhealthyCordoned"
	ReasonNodeUncordoned     = "GPUUnhealthyUncordoned"
	ReasonEvicted            = "GPUUnhealthyEvicted"
	ReasonEvictFailed        = "GPUUnhealthyEvictionFailed"
)

const eventAction = "GPUHealth"

// condition is the GPUHealthy condition for the GPUs out of service; returns
// of GPUs back in service are told while all are in.
func condition(out []GPURecord, all map[string]GPURecord, total int, p QuarantinePolicy) (status corev1.ConditionStatus, reason, message string) {
	if len(out) == 0 {
		message = fmt.Sprintf("all %d GPUs in service (no critical XID, double-bit ECC error or lost GPU out of service)", total)
		var back []string
		for _, r := range sortedRecords(all) {
			if r.Returns > 0 || r.Failures > 0 {
				back = append(back, fmt.Sprintf("GPU %d (%s) failed %d times, returned %d times", r.Last.Index, r.Last.UUID, r.Failures, r.Returns))
			}
		}
		if len(back) > 0 {
			message += "; " + strings.Join(back, "; ")
		}
		return corev1.ConditionTrue, "AllGPUsHealthy", message
	}
	reason = string(out[0].Last.Kind)
	for _, r := range out[1:] {
		if string(r.Last.Kind) != reason {
			reason = "GPUsFailed"
		}
	}
	return corev1.ConditionFalse, reason, summary(out, total, p)
}

func sortedRecords(all map[string]GPURecord) []GPURecord {
	out := make([]GPURecord, 0, len(all))
	for _, r := range all {
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b GPURecord) int { return a.Last.Index - b.Last.Index })
	return out
}

// restore continues, once, from what a previous agent left on the node: the
// quarantine records (the device plugin is told about the GPUs still out) and
// the GPU-seconds lost per team.
func (h *Health) restore(ctx context.Context, node *corev1.Node) {
	h.mu.Lock()
	if h.restored {
		h.mu.Unlock()
		return
	}
	h.restored = true
	var records map[string]GPURecord
	if v := node.Annotations[contract.AnnotationGPUQuarantine]; v != "" {
		if err := json.Unmarshal([]byte(v), &records); err != nil {
			logr.FromContextOrDiscard(ctx).Error(err, "the node's GPU quarantine record is unreadable; starting afresh", "annotation", contract.AnnotationGPUQuarantine)
			records = nil
		}
	}
	h.q.Policy = h.Quarantine
	before := uuids(h.q.Out())
	h.q.Restore(records)
	if v := node.Annotations[contract.AnnotationGPUSecondsLost]; v != "" {
		var lost map[string]float64
		if err := json.Unmarshal([]byte(v), &lost); err == nil {
			if h.lost == nil {
				h.lost = map[string]float64{}
			}
			for team, secs := range lost {
				h.lost[team] = max(h.lost[team], secs)
			}
		}
	}
	out := h.q.Out()
	h.mu.Unlock()
	for _, r := range out {
		if h.OnUnhealthy != nil && !slices.Contains(before, r.Last.UUID) {
			h.OnUnhealthy(r.Last.UUID)
		}
	}
}

// clearRequested returns to service the GPUs an operator named in the
// annotation gpuvc.dev/gpu-quarantine-clear ("all" for every GPU out), and
// removes the annotation.
func (h *Health) clearRequested(ctx context.Context, node *corev1.Node) (*corev1.Node, error) {
	v, ok := node.Annotations[contract.AnnotationGPUQuarantineClear]
	if !ok {
		return node, nil
	}
	h.mu.Lock()
	var want []string
	for _, part := range strings.Split(v, ",") {
		if part = strings.TrimSpace(part); part == "all" {
			want = append(want, uuids(h.q.Out())...)
		} else if part != "" {
			want = append(want, part)
		}
	}
	var cleared, invalid []string
	for _, uuid := range want {
		if h.q.Clear(uuid) {
			cleared = append(cleared, uuid)
			h.note(corev1.EventTypeNormal, ReasonGPUCleared, "GPU %s returned to service by the operator (annotation %s); its failure count starts again",
				uuid, contract.AnnotationGPUQuarantineClear)
		} else if !slices.Contains(cleared, uuid) {
			invalid = append(invalid, uuid)
		}
	}
	if len(invalid) > 0 {
		h.note(corev1.EventTypeWarning, ReasonClearInvalid, "%s=%q: %s not out of service on node %s (out: %q); write GPU UUIDs from annotation %s, or all",
			contract.AnnotationGPUQuarantineClear, v, strings.Join(invalid, ","), h.NodeName, uuids(h.q.Out()), contract.AnnotationUnhealthyGPUs)
	}
	h.mu.Unlock()
	for _, uuid := range cleared {
		h.returned(uuid, "clear")
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]any{contract.AnnotationGPUQuarantineClear: nil}}})
	if err != nil {
		return node, err
	}
	updated, err := h.Client.CoreV1().Nodes().Patch(ctx, h.NodeName, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: HealthFieldManager})
	if err != nil {
		return node, fmt.Errorf("removing annotation %s from node %q: %w", contract.AnnotationGPUQuarantineClear, h.NodeName, err)
	}
	return updated, nil
}

// applyStatus puts the condition (a status patch) and the annotations
// (server-side apply) on the node with field manager HealthFieldManager,
// writing only what changed, records the queued events and returns the node.
func (h *Health) applyStatus(ctx context.Context, node *corev1.Node, out []GPURecord) (*corev1.Node, error) {
	nodes := h.Client.CoreV1().Nodes()
	h.mu.Lock()
	records := h.q.Records()
	lost := maps.Clone(h.lost)
	h.mu.Unlock()
	status, reason, message := condition(out, records, h.GPUs, h.Quarantine)
	var have *corev1.NodeCondition
	for i := range node.Status.Conditions {
		if node.Status.Conditions[i].Type == contract.ConditionGPUHealthy {
			have = &node.Status.Conditions[i]
		}
	}
	var err error
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
	want := map[string]string{}
	if ids := strings.Join(uuids(out), ","); ids != "" {
		want[contract.AnnotationUnhealthyGPUs] = ids
	}
	if len(records) > 0 {
		b, err := json.Marshal(records)
		if err != nil {
			return nil, err
		}
		want[contract.AnnotationGPUQuarantine] = string(b)
	}
	if len(lost) > 0 {
		b, err := json.Marshal(lost)
		if err != nil {
			return nil, err
		}
		want[contract.AnnotationGPUSecondsLost] = string(b)
	}
	if !sameAnnotations(node.Annotations, want) {
		ac := corev1ac.Node(h.NodeName)
		if len(want) > 0 {
			ac.WithAnnotations(want)
		}
		if node, err = nodes.Apply(ctx, ac, metav1.ApplyOptions{FieldManager: HealthFieldManager, Force: true}); err != nil {
			return nil, fmt.Errorf("annotating node %q with its GPU health: %w", h.NodeName, err)
		}
	}
	h.mu.Lock()
	notes := h.notes
	h.notes = nil
	h.mu.Unlock()
	for _, n := range notes {
		h.event(node, n.kind, n.reason, "%s", n.text)
	}
	return node, nil
}

// healthAnnotations are the annotations applyStatus owns.
var healthAnnotations = []string{contract.AnnotationUnhealthyGPUs, contract.AnnotationGPUQuarantine, contract.AnnotationGPUSecondsLost}

// sameAnnotations reports whether the node's health annotations are want.
func sameAnnotations(have, want map[string]string) bool {
	for _, k := range healthAnnotations {
		h, hok := have[k]
		w, wok := want[k]
		if hok != wok || h != w {
			return false
		}
	}
	return true
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

// taint adds the NoSchedule taint (and, with cordon-drain, cordons, marking
// the cordon as the agent's) unless the node already has it. Taints are an
// atomic list: the patch carries the node's resourceVersion, so a concurrent
// change of taints is never lost (the next enforcement reads again).
func (h *Health) taint(ctx context.Context, node *corev1.Node, out []GPURecord) error {
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
	var meta map[string]any
	if cordon {
		spec["unschedulable"] = true
		meta = map[string]any{"annotations": map[string]any{contract.AnnotationGPUHealthCordoned: "true"}}
	}
	if err := h.patchNode(ctx, node, meta, spec); err != nil {
		return fmt.Errorf("tainting node %q: %w", h.NodeName, err)
	}
	h.Metrics.action(h.NodeName, "taint")
	h.event(node, corev1.EventTypeWarning, ReasonNodeTainted, "tainted %s=true:NoSchedule (%s): %s", contract.TaintGPUUnhealthy, h.taintWhy(), summary(out, h.GPUs, h.Quarantine))
	if cordon {
		h.Metrics.action(h.NodeName, "cordon")
		h.event(node, corev1.EventTypeWarning, ReasonNodeCordoned, "cordoned (%s): %s", h.taintWhy(), summary(out, h.GPUs, h.Quarantine))
	}
	return nil
}

func (h *Health) taintWhy() string {
	if h.NodeTaint == NodeTaintAnyOut {
		return "a GPU is out, --gpu-failure-node-taint=any"
	}
	return "every GPU is out"
}

// untaint removes the agent's taint from a node that no longer needs it, and
// lifts the cordon the agent set itself (annotation
// gpuvc.dev/gpu-health-cordoned); a cordon of anyone else stays.
func (h *Health) untaint(ctx context.Context, node *corev1.Node) error {
	taints := slices.DeleteFunc(slices.Clone(node.Spec.Taints), func(t corev1.Taint) bool { return t.Key == contract.TaintGPUUnhealthy })
	// Only cordon-drain may lift a cordon (the chart's node fence): under
	// another policy the agent's old cordon and its marker stay for an operator.
	_, ours := node.Annotations[contract.AnnotationGPUHealthCordoned]
	ours = ours && h.Policy == HealthCordonDrain
	if len(taints) == len(node.Spec.Taints) && !ours {
		return nil
	}
	spec := map[string]any{"taints": taints}
	var meta map[string]any
	uncordon := ours && node.Spec.Unschedulable
	if ours {
		meta = map[string]any{"annotations": map[string]any{contract.AnnotationGPUHealthCordoned: nil}}
		if uncordon {
			spec["unschedulable"] = false
		}
	}
	if err := h.patchNode(ctx, node, meta, spec); err != nil {
		return fmt.Errorf("removing taint %s from node %q: %w", contract.TaintGPUUnhealthy, h.NodeName, err)
	}
	if len(taints) != len(node.Spec.Taints) {
		h.Metrics.action(h.NodeName, "untaint")
		h.event(node, corev1.EventTypeNormal, ReasonNodeUntainted, "removed taint %s: %d of %d GPUs in service", contract.TaintGPUUnhealthy, h.GPUs-len(h.Out()), h.GPUs)
	}
	if uncordon {
		h.Metrics.action(h.NodeName, "uncordon")
		h.event(node, corev1.EventTypeNormal, ReasonNodeUncordoned, "uncordoned (the agent had cordoned it): %d of %d GPUs in service", h.GPUs-len(h.Out()), h.GPUs)
	}
	return nil
}

// patchNode merge-patches the node's metadata and spec, conditional on the
// resourceVersion read.
func (h *Health) patchNode(ctx context.Context, node *corev1.Node, meta, spec map[string]any) error {
	if meta == nil {
		return patchNodeSpec(ctx, h.Client, node, spec, HealthFieldManager)
	}
	meta["resourceVersion"] = node.ResourceVersion
	patch, err := json.Marshal(map[string]any{"metadata": meta, "spec": spec})
	if err != nil {
		return err
	}
	_, err = h.Client.CoreV1().Nodes().Patch(ctx, node.Name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: HealthFieldManager})
	return err
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
