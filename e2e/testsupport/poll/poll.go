// Package poll is how tests wait: deadline-bounded polls that fail the test
// with what they waited for and what they last saw, instead of sleeps.
package poll

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// Interval is how often a poll looks.
const Interval = 100 * time.Millisecond

// Until polls cond until it holds, for at most timeout; an error from cond, or
// the deadline, fails t naming what it waited for. An error caused by the
// poll's context ending (EndedBy) is the deadline, not cond's failure.
func Until(ctx context.Context, t testing.TB, timeout time.Duration, what string, cond func(context.Context) (bool, error)) {
	t.Helper()
	err := wait.PollUntilContextTimeout(ctx, Interval, timeout, true, func(ctx context.Context) (bool, error) {
		ok, err := cond(ctx)
		if err != nil && EndedBy(ctx, err) {
			return false, nil
		}
		return ok, err
	})
	if err != nil {
		t.Fatalf("gave up waiting (%v) for: %s", err, what)
	}
}

// UntilSeen polls cond, which also says what it saw, until it holds, for at
// most timeout. Errors from cond are retried (and shown as the last sight); the
// deadline fails t with the last sight.
func UntilSeen(ctx context.Context, t testing.TB, timeout time.Duration, what string, cond func(context.Context) (bool, string, error)) {
	t.Helper()
	UntilSeenEvery(ctx, t, Interval, timeout, what, cond)
}

// UntilSeenEvery is UntilSeen looking every interval. The last sight it fails
// with is the last one not caused by the poll's context ending (EndedBy: the
// deadline cutting a request, or the client's rate limiter refusing to wait past
// it); the context's error is said apart.
func UntilSeenEvery(ctx context.Context, t testing.TB, interval, timeout time.Duration, what string, cond func(context.Context) (bool, string, error)) {
	t.Helper()
	last := "nothing: every look ended with the context"
	err := wait.PollUntilContextTimeout(ctx, interval, timeout, true, func(ctx context.Context) (bool, error) {
		ok, seen, err := cond(ctx)
		if ok {
			return true, nil
		}
		if err != nil {
			seen = err.Error()
		}
		if !EndedBy(ctx, err) && !SightEndedBy(ctx, seen) {
			last = seen
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("gave up waiting after %v (%v) for: %s; last seen: %s", timeout, err, what, last)
	}
}
