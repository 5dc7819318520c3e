package idle

import (
	"fmt"
	"time"
)

// state is what the manager reads back from a team's host objects.
type state struct {
	// routed: the Service goes through the waker (selector saved and removed).
	routed bool
	// replicas the control plane is scaled to.
	replicas int32
	// workloadPods: team pods on the host other than the control plane and
	// vCluster's system pods, not finished.
	workloadPods int
}

// asleep: routed to the waker with the control plane scaled to zero.
func (s state) asleep() bool { return s.routed && s.replicas == 0 }

// action is one step the sleeper takes for a team.
type action string

const (
	actNone    action = ""
	actRoute   action = "Route"   // awake → drowsy: watch connections through the waker
	actUnroute action = "Unroute" // drowsy → awake: the Service back to the control plane
	actSleep   action = "Sleep"   // drowsy → asleep: scale the control plane to zero
	actWake    action = "Wake"    // asleep → awake
)

// input of one decision.
type input struct {
	now          time.Time
	lastActivity time.Time
	// sleepAfter of the Team; 0 when the Team has no vCluster idle policy.
	sleepAfter time.Duration
	// probe is how long before sleepAfter the waker starts watching connections.
	probe time.Duration
	// openConns the waker proxies now for the team.
	openConns int
	state     state
}

// decide is the sleeper's policy, a pure function of what it observed: the
// action to take and, for the Asleep condition, the reason and message.
func decide(in input) (act action, reason, message string) {
	s := in.state
	idleFor := in.now.Sub(in.lastActivity)
	switch {
	case in.sleepAfter == 0:
		if s.asleep() {
			return actWake, "Waking", "spec.idle.vcluster was removed: waking the control plane"
		}
		if s.routed {
			return actUnroute, "Awake", "spec.idle.vcluster was removed: the Service goes back to the control plane"
		}
		return actNone, "", ""
	case s.workloadPods > 0:
		msg := fmt.Sprintf("%d team pod(s) run on the host", s.workloadPods)
		if s.asleep() {
			return actWake, "Waking", msg + ": waking the control plane"
		}
		if s.routed {
			return actUnroute, "Awake", msg
		}
		return actNone, "Awake", msg
	case s.asleep():
		return actNone, "Asleep", "the control plane is scaled to zero; the next connection to the team's API address wakes it"
	case s.routed && idleFor < in.sleepAfter-in.probe:
		return actUnroute, "Awake", fmt.Sprintf("an API connection arrived %v ago: the team's API address goes straight to the control plane again", idleFor.Round(time.Second))
	case s.routed && idleFor >= in.sleepAfter && in.openConns == 0:
		return actSleep, "Asleep", fmt.Sprintf("no team pod and no new API connection for %v (spec.idle.vcluster.sleepAfter %v)", idleFor.Round(time.Second), in.sleepAfter)
	case s.routed:
		return actNone, "Drowsy", fmt.Sprintf("idle for %v; the manager counts new API connections and sleeps the control plane at %v without one",
			idleFor.Round(time.Second), in.sleepAfter)
	case idleFor >= in.sleepAfter-in.probe:
		return actRoute, "Drowsy", fmt.Sprintf("no team pod and no API connection seen for %v: routing the team's API address through the manager to count connections for %v before sleep",
			idleFor.Round(time.Second), in.sleepAfter-idleFor)
	}
	return actNone, "Awake", fmt.Sprintf("idle for %v of %v", idleFor.Round(time.Second), in.sleepAfter)
}
