package teamctl

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gpuvcv1 "github.com/gpuvc/gpuvc/api/v1alpha1"
)

// Timing paces the wait loop. The zero value means DefaultTiming.
type Timing struct {
	// Interval between two reads of the Team.
	Interval time.Duration
	// Heartbeat: after this long without a change, say what is still awaited.
	Heartbeat time.Duration
	// NoManager: a Team without any status after this long probably has no manager
	// watching it; say so (once) and keep waiting.
	NoManager time.Duration
	// FailAfter: a failure the manager keeps retrying (a reason ending in "Failed")
	// that has not changed for this long ends the wait; permanent reasons end it at once.
	FailAfter time.Duration
}

// DefaultTiming is what the CLI uses.
var DefaultTiming = Timing{Interval: 500 * time.Millisecond, Heartbeat: 15 * time.Second, NoManager: 10 * time.Second, FailAfter: 45 * time.Second}

// Event is one line of progress while waiting: a condition that changed, or a note
// (heartbeat, warning) with no condition.
type Event struct {
	Elapsed   time.Duration
	Condition *metav1.Condition
	Note      string
}

// Progress receives the events of a wait.
type Progress func(Event)

// permanentReasons will not change until the spec does: waiting longer cannot help.
var permanentReasons = map[string]string{
	"InvalidSpec": "fix the spec with `gpuvc team apply -f`; the manager does not retry until it changes",
}

// goal is what one wait waits for.
type goal struct {
	verb     string // "ready" or "deleted", for messages
	reached  func(t *gpuvcv1.Team) bool
	awaiting func(t *gpuvcv1.Team) *metav1.Condition // what to name if it ends early or times out
}

// WaitReady waits until the Team is Ready for its current generation, reporting
// every condition change, a heartbeat while nothing changes, and a warning when no
// manager seems to run. It stops at once on a permanent failure and after
// Timing.FailAfter on a failure that keeps repeating. Its error always reads
// "team NAME not ready after T: REASON: MESSAGE".
func (c *Client) WaitReady(ctx context.Context, name string, timeout time.Duration, progress Progress) (*gpuvcv1.Team, error) {
	return c.wait(ctx, name, timeout, progress, goal{
		verb: "ready",
		reached: func(t *gpuvcv1.Team) bool {
			return t != nil && apimeta.IsStatusConditionTrue(t.Status.Conditions, gpuvcv1.ConditionReady) &&
				t.Status.ObservedGeneration == t.Generation
		},
		awaiting: func(t *gpuvcv1.Team) *metav1.Condition {
			return apimeta.FindStatusCondition(t.Status.Conditions, gpuvcv1.ConditionReady)
		},
	})
}

// WaitDeleted waits until the Team is gone, with the same reporting as WaitReady.
func (c *Client) WaitDeleted(ctx context.Context, name string, timeout time.Duration, progress Progress) error {
	_, err := c.wait(ctx, name, timeout, progress, goal{
		verb:    "deleted",
		reached: func(t *gpuvcv1.Team) bool { return t == nil },
		awaiting: func(t *gpuvcv1.Team) *metav1.Condition {
			if r := apimeta.FindStatusCondition(t.Status.Conditions, gpuvcv1.ConditionReady); r != nil &&
				(r.Reason == gpuvcv1.ReasonDeleting || r.Reason == gpuvcv1.ReasonUninstallFailed) {
				return r
			}
			return &metav1.Condition{Reason: "Finalizing", Message: "the manager uninstalls the vCluster release and deletes namespace " +
				gpuvcv1.HostNamespace(t.Name) + "; see `gpuvc team get " + t.Name + "`"}
		},
	})
	return err
}

// wait reads the Team every Interval until g is reached, the deadline passes or
// the Team is stuck. It uses its own deadline rather than a context deadline so a
// read cut short by the deadline never surfaces as a client-go rate limiter error.
func (c *Client) wait(ctx context.Context, name string, timeout time.Duration, progress Progress, g goal) (*gpuvcv1.Team, error) {
	tm := c.timing()
	start := time.Now()
	report := func(e Event) {
		if progress != nil {
			e.Elapsed = time.Since(start)
			progress(e)
		}
	}
	var (
		last                 *gpuvcv1.Team
		lastErr              error
		seen                 = map[string]string{}
		lastChange           = start
		failingKey           string
		failingSince         time.Time
		warnedNoManager      bool
		lastHeartbeat, first = start, true
	)
	for {
		if !first {
			select {
			case <-ctx.Done():
				return last, fmt.Errorf("team %s: stopped waiting to be %s after %s: %w", name, g.verb, time.Since(start).Round(time.Second), ctx.Err())
			case <-time.After(tm.Interval):
			}
		}
		first = false
		now := time.Now()
		t, err := c.Get(ctx, name)
		switch {
		case errors.Is(err, ErrNotFound):
			if g.reached(nil) {
				return nil, nil
			}
			return nil, fmt.Errorf("team %s not %s: it was deleted while waiting", name, g.verb)
		case err != nil:
			if lastErr == nil || lastErr.Error() != err.Error() {
				report(Event{Note: fmt.Sprintf("cannot read team %s (retrying): %v", name, err)})
			}
			lastErr = err
		default:
			lastErr, last = nil, t
			for i := range t.Status.Conditions {
				cond := t.Status.Conditions[i]
				key := string(cond.Status) + cond.Reason + cond.Message
				if seen[cond.Type] != key {
					seen[cond.Type], lastChange = key, now
					report(Event{Condition: &cond})
				}
			}
			if g.reached(t) {
				return t, nil
			}
			if why := g.awaiting(t); why != nil && why.Status != metav1.ConditionTrue {
				if fix, ok := permanentReasons[why.Reason]; ok {
					return t, fmt.Errorf("team %s not %s after %s: %s: %s (%s)", name, g.verb, now.Sub(start).Round(100*time.Millisecond), why.Reason, why.Message, fix)
				}
				if key := why.Reason + why.Message; strings.HasSuffix(why.Reason, "Failed") {
					if key != failingKey {
						failingKey, failingSince = key, now
					} else if now.Sub(failingSince) >= tm.FailAfter {
						return t, fmt.Errorf("team %s not %s after %s: %s: %s (the manager keeps retrying, but this failure has not changed for %s; see `gpuvc team get %s`)",
							name, g.verb, now.Sub(start).Round(time.Second), why.Reason, why.Message, tm.FailAfter, name)
					}
				} else {
					failingKey = ""
				}
			}
			if len(t.Status.Conditions) == 0 && !warnedNoManager && now.Sub(start) >= tm.NoManager {
				warnedNoManager = true
				report(Event{Note: noManager(name, now.Sub(start))})
			}
		}
		if now.Sub(lastChange) >= tm.Heartbeat && now.Sub(lastHeartbeat) >= tm.Heartbeat {
			lastHeartbeat = now
			report(Event{Note: "still waiting: " + describe(last, lastErr, g)})
		}
		if now.Sub(start) >= timeout {
			return last, fmt.Errorf("team %s not %s after %s: %s", name, g.verb, timeout, describe(last, lastErr, g))
		}
	}
}

// describe says what a wait is still waiting for.
func describe(t *gpuvcv1.Team, readErr error, g goal) string {
	switch {
	case t == nil && readErr != nil:
		return "cannot read the team: " + readErr.Error()
	case t == nil:
		return "the team was never seen"
	case len(t.Status.Conditions) == 0 && g.verb == "ready":
		return noManager(t.Name, 0)
	}
	if why := g.awaiting(t); why != nil {
		return why.Reason + ": " + why.Message
	}
	return "no Ready condition yet"
}

func noManager(name string, after time.Duration) string {
	when := ""
	if after > 0 {
		when = " after " + after.Round(time.Second).String()
	}
	return fmt.Sprintf("no gpuvc manager has reported on team %s%s: is it running? Install it with `gpuvc install`, or run `gpuvc manager` against this cluster", name, when)
}

func (c *Client) timing() Timing {
	t := c.Timing
	d := DefaultTiming
	if t.Interval <= 0 {
		t.Interval = d.Interval
	}
	if t.Heartbeat <= 0 {
		t.Heartbeat = d.Heartbeat
	}
	if t.NoManager <= 0 {
		t.NoManager = d.NoManager
	}
	if t.FailAfter <= 0 {
		t.FailAfter = d.FailAfter
	}
	return t
}
