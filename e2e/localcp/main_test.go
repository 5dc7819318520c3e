package localcp_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/gpuvc/gpuvc/e2e/localcp"
)

// host is the control plane shared by this package's integration tests.
var host *localcp.ControlPlane

func TestMain(m *testing.M) {
	if os.Getenv(panicHelperEnv) != "" { // the re-exec'd helper starts its own plane
		os.Exit(m.Run())
	}
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

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}
