package teamqueue_test

import (
	"context"
	"os"
	"testing"
	"time"

	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpuvc/gpuvc/api/scheme"
	"github.com/gpuvc/gpuvc/e2e/localcp"
	"github.com/gpuvc/gpuvc/e2e/testsupport/managertest"
	"github.com/gpuvc/gpuvc/kind/localcluster"
	"github.com/gpuvc/gpuvc/kind/localkueue"
)

var (
	host  *localcluster.ControlPlane
	c     client.Client
	dc    dynamic.Interface
	kueue *localkueue.Kueue
)

// TestMain runs the package against a real control plane with kwok GPU nodes,
// the real Kueue (built from its module) and the real gpuvc manager. Kueue starts
// first: the manager watches Kueue's kinds only if they exist when it starts.
func TestMain(m *testing.M) {
	os.Exit(localcp.RunTests(m, localcluster.Options{}, func(ctx context.Context, cp *localcluster.ControlPlane) (func(), error) {
		host = cp
		k, err := localcp.StartKueue(ctx, cp, os.Stderr)
		if err != nil {
			return nil, err
		}
		kueue = k
		mgr, err := managertest.StartWith(ctx, cp, managertest.Options{NotQueuedAfter: notQueuedAfter})
		if err != nil {
			_ = k.Stop()
			return nil, err
		}
		// kueue, not k: a test may have restarted Kueue.
		stop := func() { _ = mgr.Stop(); _ = kueue.Stop() }
		if c, err = client.New(cp.Config, client.Options{Scheme: scheme.New()}); err != nil {
			stop()
			return nil, err
		}
		if dc, err = dynamic.NewForConfig(cp.Config); err != nil {
			stop()
			return nil, err
		}
		return stop, nil
	}))
}

// notQueuedAfter is the manager's grace period before it tells a pod Kueue
// never took (NotQueued): long enough for Kueue to make a Workload on a loaded
// machine, short enough for a test.
const notQueuedAfter = 15 * time.Second

func integration(t *testing.T) context.Context {
	t.Helper()
	return localcp.Context(t, 3*time.Minute)
}
