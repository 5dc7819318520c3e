package reserve

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/wait"
)

// A new pod may not reach the API server at first: a NetworkPolicy controller
// (kube-router, Calico, Cilium) lets the pod's address through only at its next
// sync, seconds later and longer on a loaded node, and until then packets are
// dropped. The reservation must then wait, not exit: an exit makes the kubelet
// restart the container with a growing back-off (10 s, 20 s, 40 s, ...), and the
// team's fractional pods wait all that time for their GPU.

// RequestTimeout bounds one request of `gpuvc reserve`, so a connection whose
// packets are dropped is given up and dialled again instead of hanging until
// the operating system's connect timeout.
const RequestTimeout = 10 * time.Second

// reachBackoff spaces attempts while the API server cannot be reached. Its
// Step keeps returning Cap once reached; wait.ExponentialBackoff would stop
// there instead (the cap ends its steps), which is why untilReached loops itself.
var reachBackoff = wait.Backoff{Duration: 200 * time.Millisecond, Factor: 2, Jitter: 0.1, Steps: 1 << 30, Cap: 3 * time.Second}

// unreachable reports whether err is a failure to talk to the API server (a
// transport error: refused, reset, timed out), not an answer from it.
func unreachable(err error) bool {
	var status apierrors.APIStatus
	if err == nil || errors.As(err, &status) {
		return false
	}
	var netErr net.Error // *url.Error, which client-go returns for transport failures, is one
	return errors.As(err, &netErr)
}

// untilReached runs attempt until it returns something other than a transport
// error, retrying with back-off while ctx lasts and logging why it waits.
func untilReached(ctx context.Context, attempt func() error) error {
	log := logr.FromContextOrDiscard(ctx)
	began := time.Now()
	backoff := reachBackoff
	for tries := 1; ; tries++ {
		err := attempt()
		if !unreachable(err) {
			return err
		}
		log.Info("cannot reach the API server yet; retrying (a new pod's NetworkPolicy may not admit it yet)", "attempt", tries, "error", err.Error())
		t := time.NewTimer(backoff.Step())
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("the API server could not be reached for %v (%d attempts; last: %w): check that the team's NetworkPolicy lets reservation pods reach the API server and that the pod network works on this node",
				time.Since(began).Round(time.Second), tries, err)
		case <-t.C:
		}
	}
}
