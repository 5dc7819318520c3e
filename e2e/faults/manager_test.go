package faults_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/gpuvc/gpuvc/e2e/testsupport/poll"
	"github.com/gpuvc/gpuvc/kind/localcluster"
	"github.com/gpuvc/gpuvc/vclusters"
)

// manager is the gpuvc manager as a child process, which the tests kill with
// SIGKILL (no shutdown of any kind) and start again on the same port. Like a
// kubelet, it restarts the process when it exits by itself (the manager exits
// when it cannot register its webhook, e.g. while the API server restarts).
type manager struct {
	mu     sync.Mutex
	cmd    *exec.Cmd
	done   chan struct{}
	port   int
	kills  int
	starts int
	exits  int // exits the manager chose (restarted as a kubelet would)
}

func startManager(ctx context.Context) (*manager, error) {
	ports, err := localcluster.FreePorts(1)
	if err != nil {
		return nil, err
	}
	m := &manager{port: ports[0]}
	if err := m.start(); err != nil {
		return nil, err
	}
	return m, m.waitServing(ctx)
}

func (m *manager) start() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	log, err := os.OpenFile(filepath.Join(env.cp.Dir, "logs", "gpuvc-manager.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer log.Close()
	fmt.Fprintf(log, "=== start %d at %s\n", m.starts+1, time.Now().Format(time.RFC3339Nano))
	cmd := exec.Command(env.bin, "--kubeconfig", env.cp.Kubeconfig, "manager",
		"--metrics-bind-address", "0", "--health-probe-bind-address", "0",
		"--webhook-port", fmt.Sprint(m.port), "--webhook-url", fmt.Sprintf("https://127.0.0.1:%d", m.port),
		"--webhook-cert-dir", filepath.Join(env.cp.Dir, "webhook-certs"),
		"--vcluster-chart-dir", env.chartDir, "--vcluster-chart-version", vclusters.DefaultChartVersion,
		"--ephemeral-vclusters", "--reserve-image", "gpuvc.test/gpuvc:test")
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return err
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	m.cmd, m.done = cmd, done
	m.starts++
	return nil
}

// kill SIGKILLs the manager and waits for it to be gone; a manager that had
// exited by itself counts as an exit, not a kill.
func (m *manager) kill() {
	m.mu.Lock()
	defer m.mu.Unlock()
	select {
	case <-m.done:
		m.exits++
		return
	default:
	}
	_ = m.cmd.Process.Kill()
	<-m.done
	m.kills++
}

// restartIfExited starts the manager again if it exited by itself.
func (m *manager) restartIfExited() error {
	m.mu.Lock()
	select {
	case <-m.done:
		m.exits++
		m.mu.Unlock()
		return m.start()
	default:
		m.mu.Unlock()
		return nil
	}
}

// stop ends the manager for good (SIGKILL: nothing to flush).
func (m *manager) stop() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	_ = m.cmd.Process.Kill()
	<-m.done
	return nil
}

// waitServing waits until the webhook accepts TLS connections: until then the
// API server refuses every pod of a team namespace.
func (m *manager) waitServing(ctx context.Context) error {
	return wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 2*time.Minute, true, func(context.Context) (bool, error) {
		if err := m.restartIfExited(); err != nil {
			return false, err
		}
		return poll.ServesTLS(m.port), nil
	})
}

// killer kills the manager at random instants (up for every[0] to every[1]
// seconds, then down for up to 2 s) until stopped, and leaves it running and
// serving.
type killer struct {
	cancel context.CancelFunc
	done   chan error
}

func startKiller(rng *rand.Rand, every [2]float64) *killer {
	ctx, cancel := context.WithCancel(context.Background())
	k := &killer{cancel: cancel, done: make(chan error, 1)}
	lo, hi := every[0], every[1]
	go func() {
		k.done <- func() error {
			for {
				up := time.Duration((lo + rng.Float64()*(hi-lo)) * float64(time.Second))
				down := time.Duration(rng.Float64() * 2 * float64(time.Second))
				select {
				case <-ctx.Done():
					return nil
				case <-time.After(up):
				}
				env.mgr.kill()
				select {
				case <-ctx.Done():
				case <-time.After(down):
				}
				if err := env.mgr.start(); err != nil {
					return err
				}
			}
		}()
	}()
	return k
}

// stop ends the kills and waits until the manager serves again.
func (k *killer) stop(ctx context.Context) error {
	k.cancel()
	if err := <-k.done; err != nil {
		return err
	}
	return env.mgr.waitServing(ctx)
}
