package scale

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/gpuvc/gpuvc/kind/localcluster"
	"github.com/gpuvc/gpuvc/vclusters/vclusterstest"
)

// managerProcess is `gpuvc manager` running as its own process.
type managerProcess struct {
	cmd     *exec.Cmd
	done    chan struct{}
	log     string
	metrics string // base URL of its metrics endpoint
}

// buildGPUVC builds the binary as the Makefile does.
func buildGPUVC(ctx context.Context, dir string) (string, error) {
	_, file, _, _ := runtime.Caller(0)
	out := filepath.Join(dir, "gpuvc")
	cmd := exec.CommandContext(ctx, "go", "build", "-ldflags=-extldflags=-Wl,-z,lazy", "-o", out, "./cmd/gpuvc")
	cmd.Dir = filepath.Join(filepath.Dir(file), "..", "..")
	cmd.Env = append(os.Environ(), "CGO_CFLAGS=-Wno-deprecated-declarations")
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building gpuvc: %v\n%s", err, b)
	}
	return out, nil
}

// startManager runs the manager against cp (CRDs installed by it, webhook at a
// loopback URL, vCluster chart from the module cache) and waits until /readyz
// answers and the webhook serves. It returns the process and how long that took.
// extra are more flags of `gpuvc manager`.
func startManager(ctx context.Context, bin, dir string, cp *localcluster.ControlPlane, extra ...string) (*managerProcess, time.Duration, error) {
	chart, err := vclusterstest.ChartDir(ctx)
	if err != nil {
		return nil, 0, err
	}
	ports, err := localcluster.FreePorts(3)
	if err != nil {
		return nil, 0, err
	}
	m := &managerProcess{log: filepath.Join(dir, fmt.Sprintf("manager-%d.log", time.Now().UnixNano())),
		metrics: fmt.Sprintf("http://127.0.0.1:%d/metrics", ports[1]), done: make(chan struct{})}
	log, err := os.Create(m.log)
	if err != nil {
		return nil, 0, err
	}
	defer log.Close()
	m.cmd = exec.Command(bin, "manager", "--kubeconfig", cp.Kubeconfig,
		"--install-crds", "--ephemeral-vclusters", "--vcluster-chart-dir", chart,
		"--webhook-port", fmt.Sprint(ports[0]), "--webhook-url", fmt.Sprintf("https://127.0.0.1:%d", ports[0]),
		"--webhook-cert-dir", filepath.Join(dir, "certs"),
		"--metrics-bind-address", fmt.Sprintf("127.0.0.1:%d", ports[1]),
		"--health-probe-bind-address", fmt.Sprintf("127.0.0.1:%d", ports[2]))
	m.cmd.Args = append(m.cmd.Args, extra...)
	m.cmd.Stdout, m.cmd.Stderr = log, log
	m.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	start := time.Now()
	if err := m.cmd.Start(); err != nil {
		return nil, 0, err
	}
	go func() { _ = m.cmd.Wait(); close(m.done) }()
	ready := fmt.Sprintf("http://127.0.0.1:%d/readyz", ports[2])
	err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		select {
		case <-m.done:
			return false, fmt.Errorf("gpuvc manager exited; see %s", m.log)
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
		m.stop()
		return nil, 0, err
	}
	return m, time.Since(start), nil
}

// stop sends SIGTERM and waits for the exit (SIGKILL after 30 s).
func (m *managerProcess) stop() {
	_ = m.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-m.done:
	case <-time.After(30 * time.Second):
		_ = m.cmd.Process.Kill()
		<-m.done
	}
}

// usage is what /proc says of a process at one instant.
type usage struct {
	RSSKiB, PeakRSSKiB int64
	CPU                time.Duration // user + system
}

// clockTicks is USER_HZ, 100 on every Linux this runs on.
const clockTicks = 100

func (m *managerProcess) usage() (usage, error) {
	pid := m.cmd.Process.Pid
	var u usage
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return u, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, _ := strings.Cut(sc.Text(), ":")
		n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		switch k {
		case "VmRSS":
			u.RSSKiB = n
		case "VmHWM":
			u.PeakRSSKiB = n
		}
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return u, err
	}
	// Fields after the command name (which may hold spaces): state is field 3,
	// utime and stime are fields 14 and 15.
	rest := string(stat[strings.LastIndexByte(string(stat), ')')+2:])
	fs := strings.Fields(rest)
	if len(fs) < 13 {
		return u, fmt.Errorf("/proc/%d/stat: %q", pid, stat)
	}
	ut, _ := strconv.ParseInt(fs[11], 10, 64)
	st, _ := strconv.ParseInt(fs[12], 10, 64)
	u.CPU = time.Duration(ut+st) * time.Second / clockTicks
	return u, nil
}
