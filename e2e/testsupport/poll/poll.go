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
// the deadline, fails t naming what it waited for.
func Until(ctx context.Context, t testing.TB, timeout time.Duration, what string, cond func(context.Context) (bool, error)) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(ctx, Interval, timeout, true, cond); err != nil {
		t.Fatalf("gave up waiting (%v) for: %s", err, what)
	}
}

// UntilSeen polls cond, which also says what it saw, until it holds, for at
// most timeout. Errors from cond are retried (and shown as the last sight); the
// deadline fails t with the last sight.
func UntilSeen(ctx context.Context, t testing.TB, timeout time.Duration, what string, cond func(context.Context) (bool, string, error)) {
	t.Helper()
	var last string
	err := wait.PollUntilContextTimeout(ctx, Interval, timeout, true, func(ctx context.Context) (bool, error) {
		ok, seen, err := cond(ctx)
		last = seen
		if err != nil {
			last = err.Error()
		}
		return ok, nil
	})
	if err != nil {
		t.Fatalf("gave up waiting (%v) for: %s; last seen: %s", err, what, last)
	}
}
