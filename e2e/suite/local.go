package suite

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/gpuvc/gpuvc/e2e/localcp"
	"github.com/gpuvc/gpuvc/kind/localcluster"
	"github.com/gpuvc/gpuvc/manager/managertest"
	"github.com/gpuvc/gpuvc/vclusters/vclusterstest"
)

// localBackend is the local control plane with the gpuvc binary as the manager.
type localBackend struct {
	cp      *localcluster.ControlPlane
	manager *exec.Cmd
	done    chan struct{}
	dir     string
}

func startLocal(ctx context.Context, gpuvcBin string) (Backend, error) {
	cp, err := localcp.Start(ctx, localcluster.Options{Log: os.Stderr})
	if err != nil {
		return nil, err
	}
	b := &localBackend{cp: cp}
	if err := b.startManager(ctx, gpuvcBin); err != nil {
		_ = b.Stop()
		return nil, err
	}
	return b, nil
}

// startManager runs `gpuvc manager` as its own process, the way a developer runs
// it against any cluster: CRDs installed by it, webhook registered at a loopback
// URL with a self-signed certificate, vCluster chart from the Go module cache.
func (b *localBackend) startManager(ctx context.Context, bin string) error {
	chart, err := vclusterstest.ChartDir(ctx)
	if err != nil {
		return err
	}
	ports, err := localcluster.FreePorts(3)
	if err != nil {
		return err
	}
	if b.dir, err = os.MkdirTemp("", "gpuvc-e2e-manager-"); err != nil {
		return err
	}
	webhook := fmt.Sprintf("https://127.0.0.1:%d", ports[0])
	args := []string{
		"manager", "--kubeconfig", b.cp.Kubeconfig,
		"--install-crds", "--ephemeral-vclusters",
		"--vcluster-chart-dir", chart,
		"--webhook-port", fmt.Sprint(ports[0]), "--webhook-url", webhook,
		"--webhook-cert-dir", filepath.Join(b.dir, "certs"),
		"--metrics-bind-address", fmt.Sprintf("127.0.0.1:%d", ports[1]),
		"--health-probe-bind-address", fmt.Sprintf("127.0.0.1:%d", ports[2]),
	}
	log, err := os.Create(filepath.Join(b.dir, "manager.log"))
	if err != nil {
		return err
	}
	defer log.Close()
	b.manager = exec.Command(bin, args...)
	b.manager.Stdout, b.manager.Stderr = log, log
	// The manager dies with the test process, even if the test panics.
	b.manager.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := b.manager.Start(); err != nil {
		return err
	}
	b.done = make(chan struct{})
	go func() { _ = b.manager.Wait(); close(b.done) }()
	ready := fmt.Sprintf("http://127.0.0.1:%d/readyz", ports[2])
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		select {
		case <-b.done:
			return false, fmt.Errorf("gpuvc manager exited; see %s", log.Name())
		default:
		}
		resp, err := http.Get(ready)
		if err != nil {
			return false, nil
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for gpuvc manager /readyz: %w", err)
	}
	return waitTLS(ctx, ports[0])
}

func (b *localBackend) Name() string                 { return "local control plane (kwok GPU nodes)" }
func (b *localBackend) Kubeconfig() string           { return b.cp.Kubeconfig }
func (b *localBackend) Config() *rest.Config         { return b.cp.Config }
func (b *localBackend) Client() kubernetes.Interface { return b.cp.Client }
func (b *localBackend) RunsContainers() bool         { return false }

func (b *localBackend) ExportKubeconfig(ctx context.Context, team string) error {
	return managertest.ExportKubeconfig(ctx, b.cp.Client, team)
}

// ManagerPID is the manager process, for the no-leftovers check.
func (b *localBackend) ManagerPID() int { return b.manager.Process.Pid }

func (b *localBackend) Stop() error {
	if b.manager != nil && b.manager.Process != nil {
		_ = b.manager.Process.Signal(syscall.SIGTERM)
		select {
		case <-b.done:
		case <-time.After(15 * time.Second):
			_ = b.manager.Process.Kill()
			<-b.done
		}
	}
	if b.dir != "" {
		os.RemoveAll(b.dir)
	}
	return b.cp.Stop()
}

func waitTLS(ctx context.Context, port int) error {
	return wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		conn, err := tls.DialWithDialer(&net.Dialer{Timeout: time.Second}, "tcp", fmt.Sprintf("127.0.0.1:%d", port),
			&tls.Config{InsecureSkipVerify: true}) //nolint:gosec // only probes that the port serves
		if err != nil {
			return false, nil
		}
		conn.Close()
		return true, nil
	})
}
