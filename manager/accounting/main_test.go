package accounting_test

import (
	"context"
	"os"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpuvc/gpuvc/api/scheme"
	"github.com/gpuvc/gpuvc/e2e/localcp"
	"github.com/gpuvc/gpuvc/kind/localcluster"
)

var (
	host *localcluster.ControlPlane
	c    client.Client
)

// TestMain starts a real control plane with kwok GPU nodes; each test runs (and
// restarts) the real manager itself, with a fake clock for the accountant.
func TestMain(m *testing.M) {
	os.Exit(localcp.RunTests(m, localcluster.Options{}, func(_ context.Context, cp *localcluster.ControlPlane) (func(), error) {
		host = cp
		var err error
		c, err = client.New(cp.Config, client.Options{Scheme: scheme.New()})
		return nil, err
	}))
}

func integration(t *testing.T) context.Context {
	t.Helper()
	return localcp.Context(t, 5*time.Minute)
}
