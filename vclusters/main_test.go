package vclusters_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/gpuvc/gpuvc/e2e/localcp"
)

// host is the real local control plane (etcd, kube-apiserver, controller-manager,
// scheduler, kwok nodes) shared by this package's integration tests.
var host *localcp.ControlPlane

func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		os.Exit(m.Run())
	}
	os.Exit(runWithControlPlane(m))
}

func runWithControlPlane(m *testing.M) int {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	var err error
	host, err = localcp.Start(ctx, localcp.Options{Log: os.Stderr})
	if err != nil {
		fmt.Fprintln(os.Stderr, "starting the local control plane:", err)
		return 1
	}
	code := m.Run()
	if err := host.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "stopping the local control plane:", err)
		code = 1
	}
	return code
}

// requireHost skips integration tests under -short.
func requireHost(t *testing.T) *localcp.ControlPlane {
	t.Helper()
	if testing.Short() {
		t.Skip("integration test: needs the local control plane (run without -short)")
	}
	return host
}
