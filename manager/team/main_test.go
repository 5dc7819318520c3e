package team_test

import (
	"context"
	"os"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpuvc/gpuvc/api/scheme"
	"github.com/gpuvc/gpuvc/e2e/localcp"
	"github.com/gpuvc/gpuvc/e2e/testsupport/managertest"
	"github.com/gpuvc/gpuvc/kind/localcluster"
	"github.com/gpuvc/gpuvc/manager/team"
)

var (
	host *localcluster.ControlPlane
	c    client.Client
)

// TestMain runs the package against a real control plane with kwok nodes and the
// real manager (Helm SDK, vCluster chart v0.36.1 from the module cache).
func TestMain(m *testing.M) {
	os.Exit(localcp.RunTests(m, localcluster.Options{}, func(ctx context.Context, cp *localcluster.ControlPlane) (func(), error) {
		host = cp
		mgr, err := managertest.Start(ctx, cp, team.Options{})
		if err != nil {
			return nil, err
		}
		if c, err = client.New(cp.Config, client.Options{Scheme: scheme.New()}); err != nil {
			_ = mgr.Stop()
			return nil, err
		}
		return func() { _ = mgr.Stop() }, nil
	}))
}

func integration(t *testing.T) context.Context {
	t.Helper()
	return localcp.Context(t, 3*time.Minute)
}
