package poll

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/util/flowcontrol"
)

// rateLimitedPastDeadline is the error client-go's own rate limiter gives a
// request whose wait for a token would outlast its context's deadline.
func rateLimitedPastDeadline(t *testing.T) error {
	t.Helper()
	limiter := flowcontrol.NewTokenBucketRateLimiter(0.001, 1)
	limiter.Accept() // the only token: the next one is ~17 minutes away
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	err := limiter.Wait(ctx)
	if err == nil || ctx.Err() != nil {
		t.Fatalf("rate limiter: err %v with the context %v, want a refusal before the deadline", err, ctx.Err())
	}
	return fmt.Errorf("client rate limiter Wait returned an error: %w", err) // client-go's wrapping
}

func TestEndedBy(t *testing.T) {
	live := context.Background()
	done, cancel := context.WithCancel(live)
	cancel()
	limited := rateLimitedPastDeadline(t)
	for _, c := range []struct {
		name string
		ctx  context.Context
		err  error
		want bool
	}{
		{"no error", live, nil, false},
		{"a real error", live, errors.New(`pods "p" is forbidden`), false},
		{"the rate limiter refusing to wait past the deadline", live, limited, true},
		{"a request cut by the deadline", live, fmt.Errorf("Get x: %w", context.DeadlineExceeded), true},
		{"any look once the context is done", done, errors.New("connection refused"), true},
	} {
		if got := EndedBy(c.ctx, c.err); got != c.want {
			t.Errorf("%s: EndedBy = %v, want %v", c.name, got, c.want)
		}
	}
	if !SightEndedBy(live, limited.Error()) || SightEndedBy(live, "phase Pending") || !SightEndedBy(done, "phase Pending") {
		t.Error("SightEndedBy: want true for the rate limiter's text or a done context only")
	}
}

// The deadline's own failures (the rate limiter's refusal, a request cut by it)
// do not hide the last real sight; the context's error is said apart.
func TestUntilSeenKeepsTheLastSightNotCausedByTheDeadline(t *testing.T) {
	limited := rateLimitedPastDeadline(t)
	msg := run(t, func(tb testing.TB) {
		UntilSeenEvery(context.Background(), tb, 10*time.Millisecond, 300*time.Millisecond, "a pod", func(ctx context.Context) (bool, string, error) {
			deadline, _ := ctx.Deadline()
			if time.Until(deadline) > 150*time.Millisecond {
				return false, "phase Pending", nil
			}
			if time.Until(deadline) > 50*time.Millisecond {
				return false, "", limited
			}
			<-ctx.Done() // a request in flight when the deadline hits
			return false, ctx.Err().Error(), nil
		})
	})
	if !strings.Contains(msg, "last seen: phase Pending") || !strings.Contains(msg, context.DeadlineExceeded.Error()) || strings.Contains(msg, "rate") {
		t.Errorf("fatal %q, want the last real sight and the deadline apart", msg)
	}
	msg = run(t, func(tb testing.TB) {
		UntilSeenEvery(context.Background(), tb, 10*time.Millisecond, 50*time.Millisecond, "a pod", func(ctx context.Context) (bool, string, error) {
			<-ctx.Done()
			return false, "", ctx.Err()
		})
	})
	if !strings.Contains(msg, "last seen: nothing: every look ended with the context") {
		t.Errorf("fatal %q, want it to say nothing was seen", msg)
	}
}

// Until takes a failure caused by its deadline for the deadline, not for cond's
// error.
func TestUntilTakesTheRateLimiterAtTheDeadlineForTheDeadline(t *testing.T) {
	limited := rateLimitedPastDeadline(t)
	msg := run(t, func(tb testing.TB) {
		Until(context.Background(), tb, 100*time.Millisecond, "a pod", func(ctx context.Context) (bool, error) { return false, limited })
	})
	if !strings.Contains(msg, context.DeadlineExceeded.Error()) || strings.Contains(msg, "rate") {
		t.Errorf("fatal %q, want the deadline", msg)
	}
}
