package syncer

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"

	"github.com/gpuvc/gpuvc/api/contract"
)

// UPDATEs. vCluster keeps updating host pods (labels, annotations, images), and
// the API server already forbids changing most of a pod's spec. What an update
// could still undo is what gpuvc owns: gpuvc.dev/ metadata, the share gate, the
// pool selector (mutable while gated) and tolerations (additions allowed). Each is
// restored from the stored pod instead of refusing the update, so vCluster's
// syncing keeps working; new tolerations that reach other pools are removed.
// Settings judged at creation (devices, security, scheduler) are not re-judged:
// they are immutable, and a policy change must not break updates of running pods.

func mutateRestoreReserved(in *Input) []Note {
	if in.Trusted {
		return nil
	}
	// gpuvc reserve records its GPU's UUID on its own reservation pod, once.
	uuid, recording := in.Pod.Annotations[contract.AnnotationGPUUUID]
	_, recorded := in.Old.Annotations[contract.AnnotationGPUUUID]
	recording = recording && !recorded && in.ReserveWriter && in.Old.Labels[contract.LabelRole] == contract.RoleReservation
	var changed []string
	in.Pod.Labels = restoreReserved(in.Pod.Labels, in.Old.Labels, "label ", &changed)
	in.Pod.Annotations = restoreReserved(in.Pod.Annotations, in.Old.Annotations, "annotation ", &changed)
	if recording {
		in.Pod.Annotations[contract.AnnotationGPUUUID] = uuid
		changed = slices.DeleteFunc(changed, func(c string) bool { return strings.HasPrefix(c, "annotation "+contract.AnnotationGPUUUID+" ") })
	}
	if len(changed) == 0 {
		return nil
	}
	return []Note{{Warning, ReasonReservedMetadataRestored, fmt.Sprintf(
		"restored %s: keys under %s are written by gpuvc only", strings.Join(changed, ", "), contract.ReservedPrefix)}}
}

func restoreReserved(have, old map[string]string, kind string, changed *[]string) map[string]string {
	for _, k := range slices.Sorted(maps.Keys(have)) {
		if _, ok := old[k]; !ok && strings.HasPrefix(k, contract.ReservedPrefix) {
			*changed = append(*changed, fmt.Sprintf("%s%s (removed %q)", kind, k, have[k]))
			delete(have, k)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(old)) {
		if !strings.HasPrefix(k, contract.ReservedPrefix) {
			continue
		}
		if v, ok := have[k]; !ok || v != old[k] {
			if have == nil {
				have = map[string]string{}
			}
			*changed = append(*changed, fmt.Sprintf("%s%s=%q", kind, k, old[k]))
			have[k] = old[k]
		}
	}
	return have
}

func mutateRestoreGate(in *Input) []Note {
	if in.Trusted {
		return nil
	}
	has := func(p *corev1.Pod) bool {
		return slices.ContainsFunc(p.Spec.SchedulingGates, func(g corev1.PodSchedulingGate) bool { return g.Name == contract.GateGPUShare })
	}
	if !has(in.Old) || has(in.Pod) {
		return nil
	}
	in.Pod.Spec.SchedulingGates = append(in.Pod.Spec.SchedulingGates, corev1.PodSchedulingGate{Name: contract.GateGPUShare})
	return []Note{{Warning, ReasonShareGateRestored, fmt.Sprintf(
		"scheduling gate %s restored: only gpuvc removes it, once the pod's GPU share is assigned", contract.GateGPUShare)}}
}

func mutateRestorePoolSelector(in *Input) []Note {
	old, ok := in.Old.Spec.NodeSelector[contract.LabelPool]
	if !ok || in.Pod.Spec.NodeSelector[contract.LabelPool] == old {
		return nil
	}
	have := in.Pod.Spec.NodeSelector[contract.LabelPool]
	if in.Pod.Spec.NodeSelector == nil {
		in.Pod.Spec.NodeSelector = map[string]string{}
	}
	in.Pod.Spec.NodeSelector[contract.LabelPool] = old
	return []Note{{Warning, ReasonPoolSelectorRestored, fmt.Sprintf(
		"spec.nodeSelector[%s]=%q restored to %s: the pod stays in its pool", contract.LabelPool, have, old)}}
}

// mutateUpdateTolerations removes added tolerations that reach other pools and
// puts back removed ones (the API server refuses removals anyway).
func mutateUpdateTolerations(in *Input) []Note {
	pool := in.Old.Spec.NodeSelector[contract.LabelPool]
	if pool == "" {
		pool = in.pool()
	}
	inOld := func(t corev1.Toleration) bool {
		return slices.ContainsFunc(in.Old.Spec.Tolerations, func(o corev1.Toleration) bool {
			return o.MatchToleration(&t) && o.TolerationSeconds == t.TolerationSeconds
		})
	}
	var kept []corev1.Toleration
	var removed, restored []string
	for _, t := range in.Pod.Spec.Tolerations {
		if !inOld(t) && !tolerationAllowed(t, pool, in.Policy.AllowedTolerations) {
			removed = append(removed, describeToleration(t))
			continue
		}
		kept = append(kept, t)
	}
	for _, o := range in.Old.Spec.Tolerations {
		if !slices.ContainsFunc(kept, func(t corev1.Toleration) bool { return o.MatchToleration(&t) }) {
			kept = append(kept, o)
			restored = append(restored, describeToleration(o))
		}
	}
	var notes []Note
	if len(removed) > 0 {
		in.Pod.Spec.Tolerations = kept
		notes = append(notes, Note{Warning, ReasonTolerationRemoved, tolerationsRemovedMessage("added toleration(s)", removed, pool)})
	}
	if len(restored) > 0 {
		in.Pod.Spec.Tolerations = kept
		notes = append(notes, Note{Warning, ReasonTolerationRestored, fmt.Sprintf(
			"restored toleration(s) %s: tolerations cannot be removed from a pod", strings.Join(restored, ", "))})
	}
	return notes
}

// mutateRestoreQueue keeps the queue label gpuvc set on CREATE.
func mutateRestoreQueue(in *Input) []Note {
	old, hadOld := in.Old.Labels[contract.LabelKAIQueue]
	have, has := in.Pod.Labels[contract.LabelKAIQueue]
	if hadOld == has && old == have {
		return nil
	}
	if !hadOld {
		delete(in.Pod.Labels, contract.LabelKAIQueue)
	} else {
		if in.Pod.Labels == nil {
			in.Pod.Labels = map[string]string{}
		}
		in.Pod.Labels[contract.LabelKAIQueue] = old
	}
	return []Note{{Warning, ReasonQueueSet, fmt.Sprintf("label %s restored to %q: the queue is chosen by the team policy", contract.LabelKAIQueue, old)}}
}

// storesChange reports whether the API server would store a different pod
// than old if pod is what admission lets through: metadata and spec are
// compared, without what the API server sets itself (resourceVersion,
// generation, managedFields) and the status an UPDATE of the pod cannot change.
func storesChange(old, pod *corev1.Pod) bool {
	strip := func(p *corev1.Pod) *corev1.Pod {
		c := p.DeepCopy()
		c.ResourceVersion, c.Generation, c.ManagedFields, c.Status = "", 0, nil, corev1.PodStatus{}
		return c
	}
	return !equality.Semantic.DeepEqual(strip(old), strip(pod))
}
