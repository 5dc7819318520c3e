// Package managertest runs the real gpuvc manager in-process against a local control
// plane, with the vCluster chart from the Go module cache, for integration tests.
package managertest

import (
	"context"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/gpuvc/gpuvc/charts"
	"github.com/gpuvc/gpuvc/e2e/localcp"
	"github.com/gpuvc/gpuvc/manager"
	"github.com/gpuvc/gpuvc/manager/team"
	"github.com/gpuvc/gpuvc/vclusters"
	"github.com/gpuvc/gpuvc/vclusters/vclusterstest"
)

// Manager is a running manager.
type Manager struct {
	cancel context.CancelFunc
	done   chan error
}

// Start installs the CRDs on cp and runs the manager until Stop. Team options not
// set are filled for tests: the vCluster chart of the module cache, ephemeral
// datastores, and a short wait interval.
func Start(ctx context.Context, cp *localcp.ControlPlane, opts team.Options) (*Manager, error) {
	if err := charts.InstallCRDs(ctx, cp.Config); err != nil {
		return nil, err
	}
	if opts.Chart == (vclusters.ChartSource{}) {
		src, err := vclusterstest.ChartSource(ctx)
		if err != nil {
			return nil, err
		}
		opts.Chart = src
	}
	opts.Persistence.Ephemeral = true
	if opts.WaitInterval == 0 {
		opts.WaitInterval = 300 * time.Millisecond
	}
	ctrl.SetLogger(logr.Discard())
	mgr, err := manager.New(cp.Config, manager.Options{MetricsAddr: "0", HealthAddr: "0", Team: opts})
	if err != nil {
		return nil, err
	}
	runCtx, cancel := context.WithCancel(context.Background())
	m := &Manager{cancel: cancel, done: make(chan error, 1)}
	go func() { m.done <- mgr.Start(runCtx) }()
	return m, nil
}

// Stop stops the manager and waits for it to exit.
func (m *Manager) Stop() error {
	m.cancel()
	select {
	case err := <-m.done:
		return err
	case <-time.After(30 * time.Second):
		return fmt.Errorf("manager did not stop within 30s")
	}
}
