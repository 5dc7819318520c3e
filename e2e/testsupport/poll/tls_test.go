package poll

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// TestServesTLS: a TLS server with a self-signed certificate serves; a port
// nothing listens on does not, and waiting for it ends at the timeout.
func TestServesTLS(t *testing.T) {
	srv := httptest.NewTLSServer(http.NotFoundHandler())
	defer srv.Close()
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	if !ServesTLS(port) {
		t.Errorf("ServesTLS(%d) = false for a TLS server", port)
	}
	if err := UntilServesTLS(context.Background(), port, time.Second); err != nil {
		t.Errorf("UntilServesTLS: %v", err)
	}

	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := l.Addr().(*net.TCPAddr).Port
	l.Close()
	if ServesTLS(closed) {
		t.Errorf("ServesTLS(%d) = true for a closed port", closed)
	}
	if err := UntilServesTLS(context.Background(), closed, 200*time.Millisecond); err == nil {
		t.Error("UntilServesTLS on a closed port returned nil, want the timeout")
	}
}

// TestContextEndsAtCleanup: the context is live during the test and its
// cleanups registered later, and done after the test.
func TestContextEndsAtCleanup(t *testing.T) {
	var ctx context.Context
	t.Run("inner", func(t *testing.T) {
		ctx = Context(t, time.Minute)
		t.Cleanup(func() {
			if ctx.Err() != nil {
				t.Error("context ended before a cleanup registered after it")
			}
		})
		if _, ok := ctx.Deadline(); !ok || ctx.Err() != nil {
			t.Error("context has no deadline or has ended during the test")
		}
	})
	if ctx.Err() == nil {
		t.Error("context still live after the test")
	}
}
