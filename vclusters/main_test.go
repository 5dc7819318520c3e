package vclusters_test

import (
	"context"
	"os"
	"testing"

	"github.com/gpuvc/gpuvc/e2e/localcp"
)

// host is the real local control plane (etcd, kube-apiserver, controller-manager,
// scheduler, kwok nodes) shared by this package's integration tests.
var host *localcp.ControlPlane

func TestMain(m *testing.M) {
	os.Exit(localcp.RunTests(m, localcp.Options{}, func(_ context.Context, cp *localcp.ControlPlane) (func(), error) {
		host = cp
		return nil, nil
	}))
}

// requireHost skips integration tests under -short.
func requireHost(t *testing.T) *localcp.ControlPlane {
	t.Helper()
	if testing.Short() {
		t.Skip("integration test: needs the local control plane (run without -short)")
	}
	return host
}
