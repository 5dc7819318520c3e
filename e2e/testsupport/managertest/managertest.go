// Package managertest runs the real gpuvc manager in-process against a local control
// plane, with the vCluster chart from the Go module cache, for integration tests.
package managertest

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/go-logr/logr"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/gpuvc/gpuvc/charts"
	"github.com/gpuvc/gpuvc/e2e/testsupport/poll"
	"github.com/gpuvc/gpuvc/kind/localcluster"
	"github.com/gpuvc/gpuvc/manager"
	"github.com/gpuvc/gpuvc/manager/accounting"
	"github.com/gpuvc/gpuvc/manager/idle"
	"github.com/gpuvc/gpuvc/manager/team"
	"github.com/gpuvc/gpuvc/vclusters"
	"github.com/gpuvc/gpuvc/vclusters/vclusterstest"
)

// Manager is a running manager.
type Manager struct {
	cancel  context.CancelFunc
	done    chan error
	certDir string
}

// Options are the parts of the manager's options tests choose.
type Options struct {
	Team       team.Options
	Accounting accounting.Options
	// Idle and AgentMetrics as `gpuvc manager --idle-* --agent-metrics-port
	// --agent-namespace` set them (a test may set Idle.Clock).
	Idle         idle.Options
	AgentMetrics manager.AgentMetrics
	// NotQueuedAfter is manager.Options.NotQueuedAfter (0: the default).
	NotQueuedAfter time.Duration
}

// Start installs the CRDs on cp and runs the manager until Stop. Team options not
// set are filled for tests: the vCluster chart of the module cache, ephemeral
// datastores, and a short wait interval.
func Start(ctx context.Context, cp *localcluster.ControlPlane, opts team.Options) (*Manager, error) {
	return StartWith(ctx, cp, Options{Team: opts})
}

// StartWith is Start with more of the manager's options.
func StartWith(ctx context.Context, cp *localcluster.ControlPlane, o Options) (*Manager, error) {
	opts := o.Team
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
	// The pod webhook runs too, served on loopback and registered by URL, so team
	// namespaces are fenced exactly as in a cluster.
	ports, err := localcluster.FreePorts(1)
	if err != nil {
		return nil, err
	}
	port := ports[0]
	certDir, err := os.MkdirTemp("", "gpuvc-webhook-")
	if err != nil {
		return nil, err
	}
	if err := manager.ServeWebhookAt(ctx, cp.Config, fmt.Sprintf("https://127.0.0.1:%d", port), certDir); err != nil {
		return nil, err
	}
	mgr, err := manager.New(ctx, cp.Config, manager.Options{
		MetricsAddr: "0", HealthAddr: "0",
		WebhookHost: "127.0.0.1", WebhookPort: port, WebhookCertDir: certDir,
		// kwok runs no container: the image only has to be named.
		ReserveImage: "gpuvc.test/gpuvc:test",
		Team:         opts,
		Accounting:   o.Accounting,
		Idle:         o.Idle,
		AgentMetrics: o.AgentMetrics,
		// NotQueuedAfter: 0 keeps the product's default.
		NotQueuedAfter: o.NotQueuedAfter,
		// A test may stop the manager and start another in the same process.
		SkipNameValidation: true,
	})
	if err != nil {
		return nil, err
	}
	runCtx, cancel := context.WithCancel(context.Background())
	m := &Manager{cancel: cancel, done: make(chan error, 1)}
	m.certDir = certDir
	go func() { m.done <- mgr.Start(runCtx) }()
	// The webhook must serve before the API server admits any pod of a team
	// namespace (failurePolicy Fail).
	if err := poll.UntilServesTLS(ctx, port, time.Minute); err != nil {
		_ = m.Stop()
		return nil, err
	}
	return m, nil
}

// Stop stops the manager and waits for it to exit.
func (m *Manager) Stop() error {
	m.cancel()
	defer os.RemoveAll(m.certDir)
	select {
	case err := <-m.done:
		return err
	case <-time.After(30 * time.Second):
		return fmt.Errorf("manager did not stop within 30s")
	}
}
