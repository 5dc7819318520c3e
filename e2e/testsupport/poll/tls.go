package poll

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// ServesTLS reports whether 127.0.0.1:port completes a TLS handshake. The
// handshake is a full one, so the server logs no aborted connection; the
// certificate is not checked (a webhook's is self-signed).
func ServesTLS(port int) bool {
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: time.Second}, "tcp", fmt.Sprintf("127.0.0.1:%d", port),
		&tls.Config{InsecureSkipVerify: true}) //nolint:gosec // only probes that the port serves
	if err != nil {
		return false
	}
	conn.Close()
	return true
}

// UntilServesTLS waits, at most timeout, until 127.0.0.1:port serves TLS: a
// webhook, which the API server needs before it admits any pod it fences.
func UntilServesTLS(ctx context.Context, port int, timeout time.Duration) error {
	return wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		return ServesTLS(port), nil
	})
}
