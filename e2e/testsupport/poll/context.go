package poll

import (
	"context"
	"testing"
	"time"
)

// Context bounds a test's waits: it ends after timeout, or at the test's
// cleanup (cancelled there rather than before the cleanups, as t.Context is,
// so cleanups registered after it can still use it).
func Context(t testing.TB, timeout time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	t.Cleanup(cancel)
	return ctx
}

// TestTimeout bounds an integration test's waits where the test names no
// longer bound.
const TestTimeout = 2 * time.Minute

// TestContext is Context with TestTimeout.
func TestContext(t testing.TB) context.Context {
	return Context(t, TestTimeout)
}
