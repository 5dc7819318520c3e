package syncer

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/gpuvc/gpuvc/api/contract"
)

// Kueue's plain-Pod integration queues a pod that carries its queue-name label.
// Which pods queue is the team policy's choice, never the tenant's: a queueing
// team's GPU pods (whole GPUs, MIG slices, and the reservations that hold the
// GPUs of fractional pods) name the team's LocalQueue; every other pod carries
// no queue label, so it neither waits in Kueue nor depends on Kueue being up.

// wantsKueueQueue is the queue the pod must name: the team's LocalQueue for a
// GPU pod of a queueing team, "" otherwise.
func wantsKueueQueue(in *Input) string {
	if in.Policy.KueueQueue == "" || totalDevices(podDevices(in.Pod)) == 0 {
		return ""
	}
	return in.Policy.KueueQueue
}

func mutateKueueQueue(in *Input) []Note {
	want := wantsKueueQueue(in)
	have, has := in.Pod.Labels[contract.LabelKueueQueueName]
	switch {
	case want == "" && !has, has && have == want:
		return nil
	case want == "":
		delete(in.Pod.Labels, contract.LabelKueueQueueName)
		return []Note{{Warning, ReasonKueueQueueSet, fmt.Sprintf("label %s=%s removed: only the GPU pods of a queueing team wait in Kueue, in the team's queue", contract.LabelKueueQueueName, have)}}
	}
	if in.Pod.Labels == nil {
		in.Pod.Labels = map[string]string{}
	}
	in.Pod.Labels[contract.LabelKueueQueueName] = want
	if !has {
		return []Note{{"", ReasonKueueQueueSet, fmt.Sprintf("label %s=%s set: the pod waits in team %s's queue until its GPUs are free", contract.LabelKueueQueueName, want, in.Policy.Team)}}
	}
	return []Note{{Warning, ReasonKueueQueueSet, fmt.Sprintf("label %s=%s replaced by %s: team %s's queue", contract.LabelKueueQueueName, have, want, in.Policy.Team)}}
}

// mutateKueuePriority keeps a tenant's kueue.x-k8s.io/priority-class only on a
// pod that waits in the team's queue and only for a WorkloadPriorityClass the
// team may use (spec.queueing.priorityClasses): the class sets the Workload's
// priority in the cohort, where it would outrank and preempt other teams. The
// label is removed otherwise, so the Workload gets the team's own priority
// (from the pod's allowed priorityClassName, or Kueue's default). A
// prebuilt-workload-name label, which would attach the pod to a Workload
// gpuvc did not size, is removed too.
func mutateKueuePriority(in *Input) []Note {
	var notes []Note
	if have, ok := in.Pod.Labels[contract.LabelKueuePriorityClass]; ok &&
		(wantsKueueQueue(in) == "" || !slices.Contains(in.Policy.AllowedKueuePriorityClasses, have)) {
		delete(in.Pod.Labels, contract.LabelKueuePriorityClass)
		allowed := "none"
		if len(in.Policy.AllowedKueuePriorityClasses) > 0 {
			allowed = fmt.Sprint(in.Policy.AllowedKueuePriorityClasses)
		}
		notes = append(notes, Note{Warning, ReasonKueuePriorityRemoved, fmt.Sprintf(
			"label %s=%s removed: it would set the priority of the pod's Kueue workload in its cohort (limit: team %s may name %s, on GPU pods that queue); "+
				"the pod runs with the team's own priority; remove the label or ask the platform team to add the class to spec.queueing.priorityClasses",
			contract.LabelKueuePriorityClass, have, in.Policy.Team, allowed)})
	}
	if have, ok := in.Pod.Labels[contract.LabelKueuePrebuiltWorkload]; ok {
		delete(in.Pod.Labels, contract.LabelKueuePrebuiltWorkload)
		notes = append(notes, Note{Warning, ReasonKueuePriorityRemoved, fmt.Sprintf(
			"label %s=%s removed: gpuvc queues a pod as the Workload Kueue builds from it (limit: no prebuilt workloads); remove the label",
			contract.LabelKueuePrebuiltWorkload, have)})
	}
	return notes
}

// kueueLabelsKept are the Kueue labels an UPDATE may not change: the queue and
// the workload's priority and identity are decided at creation.
var kueueLabelsKept = []string{contract.LabelKueueQueueName, contract.LabelKueuePriorityClass, contract.LabelKueuePrebuiltWorkload}

// mutateRestoreKueueQueue keeps the Kueue labels gpuvc left on CREATE: a
// relabelled or unlabelled pod would leave Kueue's accounting, escape it or
// change its priority.
func mutateRestoreKueueQueue(in *Input) []Note {
	var notes []Note
	for _, key := range kueueLabelsKept {
		old, hadOld := in.Old.Labels[key]
		have, has := in.Pod.Labels[key]
		if hadOld == has && old == have {
			continue
		}
		if !hadOld {
			delete(in.Pod.Labels, key)
		} else {
			if in.Pod.Labels == nil {
				in.Pod.Labels = map[string]string{}
			}
			in.Pod.Labels[key] = old
		}
		notes = append(notes, Note{Warning, ReasonKueueQueueSet, fmt.Sprintf("label %s restored to %q: the queue and the workload's priority are chosen by the team policy at creation", key, old)})
	}
	return notes
}

// mutateForeignGates removes gpuvc's own scheduling gates from a pod gpuvc
// does not hold with them: the share gate from a pod that is not a valid
// share pod, Kueue's admission gate from a pod that does not wait in the
// team's queue (only Kueue would lift it, and Kueue ignores a pod without the
// queue label). The pod would wait forever; gates of other names are the
// tenant's own and stay.
func mutateForeignGates(in *Input) []Note {
	share := false
	if _, ok, reason, _ := parseShare(in); ok && reason == "" && in.Role != contract.RoleControlPlane {
		share = true
	}
	queued := wantsKueueQueue(in) != "" && in.Role != contract.RoleControlPlane
	var removed []string
	in.Pod.Spec.SchedulingGates = slices.DeleteFunc(in.Pod.Spec.SchedulingGates, func(g corev1.PodSchedulingGate) bool {
		if (g.Name == contract.GateGPUShare && !share) || (g.Name == contract.KueueAdmissionGate && !queued) {
			removed = append(removed, g.Name)
			return true
		}
		return false
	})
	if len(in.Pod.Spec.SchedulingGates) == 0 {
		in.Pod.Spec.SchedulingGates = nil
	}
	if len(removed) == 0 {
		return nil
	}
	return []Note{{Warning, ReasonGateRemoved, fmt.Sprintf(
		"spec.schedulingGates %v removed: gpuvc's gates are gpuvc's alone (limit: %s only on a pod with a valid gpu-fraction/gpu-memory annotation, %s only on a GPU pod in team %s's queue); "+
			"remove them: gpuvc gates the pod itself when it needs to",
		removed, contract.GateGPUShare, contract.KueueAdmissionGate, in.Policy.Team)}}
}

// Kueue's admission gate holds the ceiling. The ResourceQuota of a queueing team
// allows more than the team may run (its ceiling plus what may wait beyond it),
// so the gate is what keeps a waiting pod from running: gpuvc gates every pod it
// sends to Kueue itself, whether or not Kueue's webhook runs after it, and only
// Kueue lifts the gate, when it admits the pod within the team's quota.

func hasKueueGate(p *corev1.Pod) bool {
	return slices.ContainsFunc(p.Spec.SchedulingGates, func(g corev1.PodSchedulingGate) bool { return g.Name == contract.KueueAdmissionGate })
}

// mutateKueueGate gates a pod that waits in Kueue. Kueue's webhook adds the same
// gate (once); gpuvc's own makes the pod wait even if Kueue's webhook did not
// take it (not installed, or its selectors leave the namespace out).
func mutateKueueGate(in *Input) []Note {
	if wantsKueueQueue(in) == "" || hasKueueGate(in.Pod) {
		return nil
	}
	in.Pod.Spec.SchedulingGates = append(in.Pod.Spec.SchedulingGates, corev1.PodSchedulingGate{Name: contract.KueueAdmissionGate})
	return []Note{{"", ReasonKueueGated, fmt.Sprintf("scheduling gate %s set: the pod runs once Kueue admits it within team %s's quota", contract.KueueAdmissionGate, in.Policy.Team)}}
}

// kueueGateLifted reports an UPDATE by anyone but Kueue that removes Kueue's
// admission gate from a pod gpuvc sent to Kueue (it names a queue). A gate a
// tenant put on a pod that never queued holds no quota.
func kueueGateLifted(in *Input) bool {
	_, queued := in.Old.Labels[contract.LabelKueueQueueName]
	return queued && !in.Kueue && hasKueueGate(in.Old) && !hasKueueGate(in.Pod)
}

// checkKueueGateKept refuses anyone but Kueue lifting its admission gate;
// the team's vCluster syncer is not refused (mutateRestoreKueueGate).
func checkKueueGateKept(in *Input) (string, string, bool) {
	if !kueueGateLifted(in) || in.VClusterSyncer {
		return "", "", false
	}
	return ReasonKueueGateRemoved, fmt.Sprintf(
		"spec.schedulingGates: the gate %s was removed (limit: only Kueue lifts it, when it admits the pod within team %s's guarantee plus borrowing limit); keep the gate: the pod runs when Kueue admits it",
		contract.KueueAdmissionGate, in.Policy.Team), true
}

// mutateRestoreKueueGate puts Kueue's gate back when the team's vCluster
// removes it: vCluster sends the virtual pod's gates (none) with every update
// of the host pod, and its other changes must still pass.
func mutateRestoreKueueGate(in *Input) []Note {
	if !kueueGateLifted(in) {
		return nil
	}
	in.Pod.Spec.SchedulingGates = append(in.Pod.Spec.SchedulingGates, corev1.PodSchedulingGate{Name: contract.KueueAdmissionGate})
	return []Note{{Warning, ReasonKueueGateRestored, fmt.Sprintf(
		"scheduling gate %s restored: only Kueue lifts it, when it admits the pod within team %s's quota", contract.KueueAdmissionGate, in.Policy.Team)}}
}
