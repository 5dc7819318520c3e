package teamstatus_test

import (
	"context"
	"os"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpuvc/gpuvc/api/scheme"
	"github.com/gpuvc/gpuvc/charts"
	"github.com/gpuvc/gpuvc/e2e/localcp"
	"github.com/gpuvc/gpuvc/kind/localcluster"
)

var c client.Client

// TestMain starts a real control plane with gpuvc's CRDs: ownership of list
// entries and fields is what the API server does, which the fake client does
// not model (it treats lists as atomic).
func TestMain(m *testing.M) {
	os.Exit(localcp.RunTests(m, localcluster.Options{}, func(ctx context.Context, cp *localcluster.ControlPlane) (func(), error) {
		if err := charts.InstallCRDs(ctx, cp.Config); err != nil {
			return nil, err
		}
		var err error
		c, err = client.New(cp.Config, client.Options{Scheme: scheme.New()})
		return nil, err
	}))
}

func integration(t *testing.T) context.Context {
	t.Helper()
	return localcp.Context(t, 2*time.Minute)
}
