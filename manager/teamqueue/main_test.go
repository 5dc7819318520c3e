package teamqueue_test

import (
	"context"
	"io"
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
	"github.com/gpuvc/gpuvc/manager/team"
)

var (
	host  *localcluster.ControlPlane
	c     client.Client
	dc    dynamic.Interface
	kueue *localkueue.Kueue
	mgr   *managertest.Manager
)

// TestMain runs the package against a real control plane with kwok GPU nodes,
// the real Kueue (built from its module) and the real gpuvc manager. Kueue starts
// first: the manager watches Kueue's kinds only if they exist when it starts.
func TestMain(m *testing.M) {
	os.Exit(localcp.RunTests(m, localcluster.Options{}, func(ctx context.Context, cp *localcluster.ControlPlane) (func(), error) {
		host = cp
		k, err := startKueue(ctx, os.Stderr)
		if err != nil {
			return nil, err
		}
		kueue = k
		m, err := startManager(ctx, historyPools)
		if err != nil {
			_ = k.Stop()
			return nil, err
		}
		mgr = m
		// kueue and mgr, not k and m: a test may have restarted either.
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

// startManager starts the package's manager on host with these usage-history pools.
func startManager(ctx context.Context, pools []string) (*managertest.Manager, error) {
	return managertest.StartWith(ctx, host, managertest.Options{
		NotQueuedAfter: notQueuedAfter,
		Team:           team.Options{UsageHistoryPools: pools},
	})
}

// startKueue starts the package's Kueue on host, with admission fair sharing on
// (usageHistory) for the usage-history pools.
func startKueue(ctx context.Context, log io.Writer) (*localkueue.Kueue, error) {
	return localcp.StartKueueWith(ctx, host, localkueue.Options{Log: log, UsageHistory: &usageHistory})
}

// usageHistory is Kueue's admissionFairSharing here: a half-life of seconds,
// not a platform's days, so that a test's past use shows within its run, yet
// long against the shares benchmark's 4-s jobs (with 10 s against 3-s jobs the
// memory was so short that the teams' shares drifted towards equal: 0.58
// measured for weights 1:2). The one-second sampling writes each
// LocalQueue's status once a second and after each admission; on a handful of
// queues that is little against the pods' own writes.
var usageHistory = localkueue.UsageHistory{HalfLife: 30 * time.Second, SamplingInterval: time.Second}

// historyPools share their GPUs by usage history (one ClusterQueue per pool):
// the tests' and the benchmark's.
var historyPools = []string{poolHistoryTest, poolHistoryMembers, poolHistoryBench}

// notQueuedAfter is the manager's grace period before it tells a pod Kueue
// never took (NotQueued): long enough for Kueue to make a Workload on a loaded
// machine, short enough for a test.
const notQueuedAfter = 15 * time.Second

func integration(t *testing.T) context.Context {
	t.Helper()
	return localcp.Context(t, 3*time.Minute)
}
