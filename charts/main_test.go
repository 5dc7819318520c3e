package charts

import (
	"context"
	"os"
	"testing"

	"github.com/gpuvc/gpuvc/e2e/localcp"
	"github.com/gpuvc/gpuvc/kind/localcluster"
)

// host is the local control plane (etcd, kube-apiserver, controller-manager,
// scheduler, kwok GPU nodes) the integration tests install the chart on; nil under
// -short.
var host *localcluster.ControlPlane

func TestMain(m *testing.M) {
	if spec := os.Getenv(managerChildEnv); spec != "" {
		os.Exit(runManagerChild(spec)) // a manager process of TestInstall
	}
	os.Exit(localcp.RunTests(m, localcluster.Options{}, func(_ context.Context, cp *localcluster.ControlPlane) (func(), error) {
		host = cp
		return nil, nil
	}))
}
