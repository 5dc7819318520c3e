package claims_test

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/gpuvc/gpuvc/api/scheme"
	"github.com/gpuvc/gpuvc/e2e/localcp"
	"github.com/gpuvc/gpuvc/kind/localcluster"
	"github.com/gpuvc/gpuvc/syncer/claims"
)

// teamNamespace is the manager's rule: team namespaces are team-<name>.
func teamNamespace(ns string) bool { return strings.HasPrefix(ns, "team-") }

// TestMain runs the controller in a manager against a real control plane,
// whose controller manager's PersistentVolume controller binds claims and
// records why it cannot.
func TestMain(m *testing.M) {
	ctrl.SetLogger(logr.Discard())
	os.Exit(localcp.RunTests(m, localcluster.Options{}, func(ctx context.Context, cp *localcluster.ControlPlane) (func(), error) {
		mgr, err := ctrl.NewManager(cp.Config, ctrl.Options{
			Scheme:                 scheme.New(),
			Metrics:                metricsserver.Options{BindAddress: "0"},
			HealthProbeBindAddress: "0",
			Controller:             config.Controller{SkipNameValidation: ptrTo(true)},
		})
		if err != nil {
			return nil, err
		}
		if err := claims.New(mgr.GetClient(), nil).SetupWithManager(mgr, teamNamespace); err != nil {
			return nil, err
		}
		ctx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- mgr.Start(ctx) }()
		return func() { cancel(); <-done }, nil
	}))
}

func ptrTo[T any](v T) *T { return &v }
