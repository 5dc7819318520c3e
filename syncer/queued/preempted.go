package queued

import (
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// ReasonPreempted names the event a pod gets when Kueue evicts it to give its
// GPUs to another pod.
const ReasonPreempted = "Preempted"

// preemption returns the reason and message of the Workload's Preempted
// condition while it holds (Kueue resets it when the Workload is admitted
// again), "" otherwise.
func preemption(wl *unstructured.Unstructured) (reason, msg string) {
	conds, _, _ := unstructured.NestedSlice(wl.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == "Preempted" && m["status"] == "True" {
			reason, _ = m["reason"].(string)
			msg, _ = m["message"].(string)
			return reason, msg
		}
	}
	return "", ""
}

// preemptedMessage is the event an evicted pod gets, in the team's terms. Kueue's
// own event (Stopped, Normal) says it with Workload UIDs and queue paths.
func preemptedMessage(team, cohort, reason, kueueMsg string) string {
	in := ""
	if cohort != "" {
		in = " of cohort " + cohort
	}
	why := "Kueue stopped it for another pod"
	switch reason {
	case "InCohortReclamation":
		why = "team " + team + " was using GPUs beyond its guarantee, and another team" + in + " took back its own guaranteed GPUs"
	case "InCohortReclaimWhileBorrowing", "InCohortFairSharing":
		why = "another team" + in + " with a smaller fair share of the borrowed GPUs needed them"
	case "InClusterQueue":
		why = "a higher-priority pod of team " + team + " needed its GPUs"
	}
	s := "preempted: " + why + "; the pod is stopped and not restarted: create it again to queue again"
	if kueueMsg = strings.TrimSpace(kueueMsg); kueueMsg != "" {
		s += "; Kueue: " + kueueMsg
	}
	return s
}
