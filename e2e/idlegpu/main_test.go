package idlegpu_test

import (
	"context"
	"os"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpuvc/gpuvc/api/scheme"
	"github.com/gpuvc/gpuvc/e2e/localcp"
	"github.com/gpuvc/gpuvc/kind/localcluster"
)

var (
	cp *localcluster.ControlPlane
	c  client.Client
	cs kubernetes.Interface
)

// TestMain starts a control plane with kwok GPU nodes; each test starts its
// own manager (the agent's address is the test's).
func TestMain(m *testing.M) {
	os.Exit(localcp.RunTests(m, localcluster.Options{}, func(_ context.Context, started *localcluster.ControlPlane) (func(), error) {
		cp, cs = started, started.Client
		var err error
		c, err = client.New(cp.Config, client.Options{Scheme: scheme.New()})
		return nil, err
	}))
}

func integration(t *testing.T) context.Context {
	t.Helper()
	return localcp.Context(t, 8*time.Minute)
}
