package syncer

import (
	"fmt"
	"slices"

	"github.com/gpuvc/gpuvc/api/contract"
)

// Scheduling settings a tenant must not choose on the host: another scheduler
// could ignore taints and quotas, another queue or priority class would take
// capacity from other teams, and a runtime class can change how devices are
// exposed. Values outside the team policy are replaced or removed.

func mutateSchedulerName(in *Input) []Note {
	want := in.Policy.schedulerName()
	have := in.Pod.Spec.SchedulerName
	if have == want {
		return nil
	}
	in.Pod.Spec.SchedulerName = want
	if have == "" {
		return []Note{{"", ReasonSchedulerNameReplaced, "spec.schedulerName set to " + want}}
	}
	return []Note{{Warning, ReasonSchedulerNameReplaced, fmt.Sprintf(
		"spec.schedulerName=%s replaced by %s: team %s's pods are scheduled by %s", have, want, in.Policy.Team, want)}}
}

func mutatePriorityClass(in *Input) []Note {
	s := &in.Pod.Spec
	if s.PriorityClassName == "" || slices.Contains(in.Policy.AllowedPriorityClasses, s.PriorityClassName) {
		return nil
	}
	have := s.PriorityClassName
	// The Priority admission plugin already resolved the class into these.
	s.PriorityClassName, s.Priority, s.PreemptionPolicy = "", nil, nil
	return []Note{{Warning, ReasonPriorityClassRemoved, fmt.Sprintf(
		"spec.priorityClassName=%s removed: team %s may use %s", have, in.Policy.Team, listOrNone(in.Policy.AllowedPriorityClasses))}}
}

func mutateRuntimeClass(in *Input) []Note {
	s := &in.Pod.Spec
	if s.RuntimeClassName == nil || slices.Contains(in.Policy.AllowedRuntimeClasses, *s.RuntimeClassName) {
		return nil
	}
	have := *s.RuntimeClassName
	// The RuntimeClass admission plugin set the overhead from the class and
	// refuses an overhead without a class.
	s.RuntimeClassName, s.Overhead = nil, nil
	return []Note{{Warning, ReasonRuntimeClassRemoved, fmt.Sprintf(
		"spec.runtimeClassName=%s removed: team %s may use %s", have, in.Policy.Team, listOrNone(in.Policy.AllowedRuntimeClasses))}}
}

func mutateQueue(in *Input) []Note {
	want := in.Policy.Queue
	have, has := in.Pod.Labels[contract.LabelKAIQueue]
	switch {
	case want == "" && !has, has && have == want:
		return nil
	case want == "":
		delete(in.Pod.Labels, contract.LabelKAIQueue)
		return []Note{{Warning, ReasonQueueSet, fmt.Sprintf("label %s=%s removed: team %s has no scheduler queue", contract.LabelKAIQueue, have, in.Policy.Team)}}
	}
	if in.Pod.Labels == nil {
		in.Pod.Labels = map[string]string{}
	}
	in.Pod.Labels[contract.LabelKAIQueue] = want
	if !has {
		return []Note{{"", ReasonQueueSet, fmt.Sprintf("label %s=%s set", contract.LabelKAIQueue, want)}}
	}
	return []Note{{Warning, ReasonQueueSet, fmt.Sprintf("label %s=%s replaced by %s: team %s's queue", contract.LabelKAIQueue, have, want, in.Policy.Team)}}
}

func listOrNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return fmt.Sprint(s)
}
