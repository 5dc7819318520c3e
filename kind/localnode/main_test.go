package localnode_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/gpuvc/gpuvc/e2e/localcp"
	"github.com/gpuvc/gpuvc/kind/localcluster"
	"github.com/gpuvc/gpuvc/kind/localcluster/images"
	"github.com/gpuvc/gpuvc/kind/localnode"
	"github.com/gpuvc/gpuvc/kind/nodepool"
)

// The package's shared fixtures: node binaries and image tarballs, set by setup.
var (
	nodeBins  *localcluster.NodeBinaries
	imageTars []string
	notRoot   bool
)

func TestMain(m *testing.M) {
	if os.Getenv(crashHelperEnv) != "" { // the re-exec'd helper starts its own planes
		os.Exit(m.Run())
	}
	if os.Geteuid() != 0 {
		notRoot = true
		os.Exit(m.Run())
	}
	// No simulated nodes: every pod lands on the real node. The API server
	// advertises the node IP, which exists while a node (its host) runs.
	opts := localcluster.Options{NodeIP: localnode.NodeIP, Pools: []nodepool.Pool{}}
	os.Exit(localcp.RunTests(m, opts, setup))
}

func setup(ctx context.Context, cp *localcluster.ControlPlane) (func(), error) {
	began := time.Now()
	var err error
	if nodeBins, err = localcp.EnsureNodeBinaries(ctx, os.Stderr); err != nil {
		return nil, err
	}
	if imageTars, err = buildImages(ctx); err != nil {
		return nil, err
	}
	fmt.Fprintf(os.Stderr, "localnode tests: binaries and images ready in %v\n", time.Since(began).Round(10*time.Millisecond))
	return nil, nil
}

// buildImages builds (or finds cached) the pause and workload images.
func buildImages(ctx context.Context) ([]string, error) {
	dir := images.DefaultDir()
	pause, err := localcp.Pause(ctx, dir)
	if err != nil {
		return nil, err
	}
	var tars []string
	for _, spec := range []images.Spec{pause, images.Workload(images.HostBusybox)} {
		tar, err := images.Build(spec, dir)
		if err != nil {
			return nil, err
		}
		tars = append(tars, tar)
	}
	return tars, nil
}

// forTest returns the control plane, skipping under -short and when not root.
func forTest(t *testing.T) *localcluster.ControlPlane {
	t.Helper()
	if notRoot && !testing.Short() {
		t.Skip("integration test: a real node needs root (containerd, runc, cgroups, iptables); run as root or with -short")
	}
	return localcp.ForTest(t)
}
