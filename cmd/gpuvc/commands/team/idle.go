package team

import (
	"fmt"
	"strings"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"

	gpuvcv1 "github.com/gpuvc/gpuvc/api/v1alpha1"
)

// idleLine summarises the idle policy and where the vCluster stands, e.g.
// "asleep for 2h (sleeps after 30m idle); last wake took 21.3s, 3h ago".
func idleLine(t *gpuvcv1.Team, now time.Time) string {
	i := t.Spec.Idle
	if i == nil || (i.VCluster == nil && i.GPUPods == nil) {
		return "off: the vCluster runs until the team is deleted"
	}
	var parts []string
	if v := i.VCluster; v != nil {
		policy := fmt.Sprintf("sleeps after %v idle", v.SleepAfter.Duration)
		c := apimeta.FindStatusCondition(t.Status.Conditions, gpuvcv1.ConditionAsleep)
		switch {
		case c == nil:
			parts = append(parts, policy)
		case c.Reason == gpuvcv1.ReasonAsleep:
			parts = append(parts, fmt.Sprintf("asleep for %s (%s); the next request wakes it", age(c.LastTransitionTime, now), policy))
		default:
			parts = append(parts, fmt.Sprintf("%s (%s): %s", strings.ToLower(c.Reason), policy, c.Message))
		}
		if s := t.Status.Idle; s != nil && s.LastWake != nil {
			parts = append(parts, fmt.Sprintf("last wake took %v, %s ago", s.LastWake.Latency.Duration.Round(100*time.Millisecond), age(s.LastWake.At, now)))
		}
	}
	if g := i.GPUPods; g != nil {
		action := g.Action
		if action == "" {
			action = gpuvcv1.IdleActionNotify
		}
		what := strings.ToLower(action)
		if action == gpuvcv1.IdleActionSleep {
			what = "sleep the whole team once all of them are (its pods evicted; one idle while another is busy is notified)"
		}
		parts = append(parts, fmt.Sprintf("GPU pods at or below %d%% utilization for %v: %s", g.MaxUtilizationPercent, g.After.Duration, what))
	}
	return strings.Join(parts, "; ")
}
