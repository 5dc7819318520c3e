package teamctl

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// Reachable waits, for within at most, until server (a kubeconfig's https URL)
// accepts a TCP connection from this machine, calling notYet with the first
// refusal. A Ready team's Service may refuse for a moment while the node's
// service proxy programs the new endpoint, so a refusal is retried; any other
// failure (no route, a timeout: the address is not reachable from here at all)
// is returned at once. The error is the last failure.
func Reachable(ctx context.Context, server string, within time.Duration, notYet func(addr string, err error)) error {
	u, err := url.Parse(server)
	if err != nil || u.Hostname() == "" {
		return fmt.Errorf("server %q is not a URL with a host", server)
	}
	addr := u.Host
	if u.Port() == "" { // https://<ClusterIP>, as the team servers of the local clusters are
		addr = net.JoinHostPort(u.Hostname(), "443")
	}
	var last error
	err = wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, within, true, func(ctx context.Context) (bool, error) {
		conn, err := (&net.Dialer{Timeout: 2 * time.Second}).DialContext(ctx, "tcp", addr)
		if err != nil {
			if !errors.Is(err, syscall.ECONNREFUSED) {
				return false, err
			}
			if last == nil && notYet != nil {
				notYet(addr, err)
			}
			last = err
			return false, nil
		}
		conn.Close()
		return true, nil
	})
	if wait.Interrupted(err) && last != nil {
		return last
	}
	return err
}
