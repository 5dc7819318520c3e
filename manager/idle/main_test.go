package idle_test

import (
	"context"
	"os"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpuvc/gpuvc/api/scheme"
	"github.com/gpuvc/gpuvc/charts"
	"github.com/gpuvc/gpuvc/e2e/localcp"
	"github.com/gpuvc/gpuvc/kind/localcluster"
)

var (
	c   client.Client
	cfg *rest.Config // of the control plane, for informers
)

// TestMain starts a real control plane with kwok nodes (which run the stand-in
// control-plane pods and report them ready) and its EndpointSlice controller.
func TestMain(m *testing.M) {
	os.Exit(localcp.RunTests(m, localcluster.Options{}, func(ctx context.Context, cp *localcluster.ControlPlane) (func(), error) {
		if err := charts.InstallCRDs(ctx, cp.Config); err != nil {
			return nil, err
		}
		cfg = cp.Config
		var err error
		c, err = client.New(cp.Config, client.Options{Scheme: scheme.New()})
		return nil, err
	}))
}

func integration(t *testing.T) context.Context {
	t.Helper()
	return localcp.Context(t, 5*time.Minute)
}
