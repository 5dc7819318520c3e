package supervise

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// ReadyTimeout bounds each wait; a daemon that has not come up by then has failed.
const ReadyTimeout = 2 * time.Minute

// Poll runs cond until it reports done, failing fast if any of procs has exited
// (with the tail of its log) and naming cond's last error on timeout.
func Poll(ctx context.Context, what string, procs []*Process, cond func(ctx context.Context) (bool, error)) error {
	var last error
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, ReadyTimeout, true, func(ctx context.Context) (bool, error) {
		for _, p := range procs {
			if err := p.Exited(); err != nil {
				return false, err
			}
		}
		ok, err := cond(ctx)
		last = err
		return ok, nil
	})
	if err != nil {
		if last != nil {
			return fmt.Errorf("waiting for %s: %w (last error: %v)", what, err, last)
		}
		return fmt.Errorf("waiting for %s: %w", what, err)
	}
	return nil
}

// WaitHTTP waits for a health endpoint to answer 200. Local daemons serve health
// with self-signed certificates and need no credentials there, so verification
// is skipped for this probe only.
func WaitHTTP(ctx context.Context, what string, procs []*Process, url string) error {
	client := &http.Client{
		Timeout:   2 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}, //nolint:gosec // health probe of a local daemon
	}
	return Poll(ctx, what+" health", procs, func(ctx context.Context) (bool, error) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := client.Do(req)
		if err != nil {
			return false, err
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, fmt.Errorf("%s answered %s", url, resp.Status)
	})
}
