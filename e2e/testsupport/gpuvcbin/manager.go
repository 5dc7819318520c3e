package gpuvcbin

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/gpuvc/gpuvc/e2e/testsupport/poll"
	"github.com/gpuvc/gpuvc/kind/localcluster"
	"github.com/gpuvc/gpuvc/vclusters/vclusterstest"
)

// Manager is `gpuvc manager` running as its own process.
type Manager struct {
	cmd  *exec.Cmd
	done chan struct{}
	// Log is the file the process writes to.
	Log string
	// Metrics is the URL of its metrics endpoint.
	Metrics string
	// StartedIn is how long it took from exec until it served.
	StartedIn time.Duration
}

// StartManager runs bin's manager against the cluster of kubeconfig, the way a
// developer runs it against any cluster: CRDs installed by it, the webhook
// registered at a loopback URL with a self-signed certificate (under dir), the
// vCluster chart from the Go module cache, its log in dir. It returns once
// /readyz answers and the webhook serves; the process dies with the test
// process, even if the test panics. extra are more flags of `gpuvc manager`.
func StartManager(ctx context.Context, bin, kubeconfig, dir string, extra ...string) (*Manager, error) {
	chart, err := vclusterstest.ChartDir(ctx)
	if err != nil {
		return nil, err
	}
	ports, err := localcluster.FreePorts(3)
	if err != nil {
		return nil, err
	}
	webhook, metrics, health := ports[0], ports[1], ports[2]
	m := &Manager{
		Log:     filepath.Join(dir, fmt.Sprintf("manager-%d.log", time.Now().UnixNano())),
		Metrics: fmt.Sprintf("http://127.0.0.1:%d/metrics", metrics),
		done:    make(chan struct{}),
	}
	log, err := os.Create(m.Log)
	if err != nil {
		return nil, err
	}
	defer log.Close()
	m.cmd = exec.Command(bin, "manager", "--kubeconfig", kubeconfig,
		"--install-crds", "--ephemeral-vclusters", "--vcluster-chart-dir", chart,
		"--webhook-port", fmt.Sprint(webhook), "--webhook-url", fmt.Sprintf("https://127.0.0.1:%d", webhook),
		"--webhook-cert-dir", filepath.Join(dir, "certs"),
		"--metrics-bind-address", fmt.Sprintf("127.0.0.1:%d", metrics),
		"--health-probe-bind-address", fmt.Sprintf("127.0.0.1:%d", health))
	m.cmd.Args = append(m.cmd.Args, extra...)
	m.cmd.Stdout, m.cmd.Stderr = log, log
	m.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	began := time.Now()
	if err := m.cmd.Start(); err != nil {
		return nil, err
	}
	go func() { _ = m.cmd.Wait(); close(m.done) }()
	if err := m.waitReady(ctx, health); err != nil {
		m.Stop()
		return nil, fmt.Errorf("waiting for gpuvc manager /readyz: %w", err)
	}
	if err := poll.UntilServesTLS(ctx, webhook, time.Minute); err != nil {
		m.Stop()
		return nil, fmt.Errorf("waiting for gpuvc manager's webhook: %w", err)
	}
	m.StartedIn = time.Since(began)
	return m, nil
}

// waitReady polls /readyz, failing fast if the process exits.
func (m *Manager) waitReady(ctx context.Context, port int) error {
	ready := fmt.Sprintf("http://127.0.0.1:%d/readyz", port)
	return wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		select {
		case <-m.done:
			return false, fmt.Errorf("gpuvc manager exited; see %s", m.Log)
		default:
		}
		resp, err := http.Get(ready)
		if err != nil {
			return false, nil
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
}

// PID is the manager's process id.
func (m *Manager) PID() int { return m.cmd.Process.Pid }

// Stop sends SIGTERM and waits for the exit (SIGKILL after 30 s).
func (m *Manager) Stop() {
	_ = m.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-m.done:
	case <-time.After(30 * time.Second):
		_ = m.cmd.Process.Kill()
		<-m.done
	}
}
