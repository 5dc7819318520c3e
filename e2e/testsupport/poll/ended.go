package poll

import (
	"context"
	"errors"
	"strings"
)

// rateLimiterPastDeadline is how client-go's rate limiter (golang.org/x/time/rate)
// refuses a request whose wait for a token would outlast the context's deadline.
// It wraps no context error and comes before the context is done.
const rateLimiterPastDeadline = "would exceed context deadline"

// EndedBy reports whether a failed look was caused by ctx ending rather than by
// what was looked at: ctx is done, err wraps a context error, or the client's rate
// limiter refused to wait past ctx's deadline. Such a failure says nothing about
// the thing a poll waits for, so it must not replace the last real sight.
func EndedBy(ctx context.Context, err error) bool {
	if ctx.Err() != nil {
		return true
	}
	if err == nil {
		return false
	}
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) ||
		strings.Contains(err.Error(), rateLimiterPastDeadline)
}

// SightEndedBy is EndedBy for a sight written as text (a poll whose condition
// reports fmt.Sprint(err)): ctx is done, or the text is the rate limiter's refusal.
func SightEndedBy(ctx context.Context, seen string) bool {
	return ctx.Err() != nil || strings.Contains(seen, rateLimiterPastDeadline)
}
