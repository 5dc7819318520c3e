package suite

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/gpuvc/gpuvc/e2e/localcp"
	"github.com/gpuvc/gpuvc/gpu/inventory"
	"github.com/gpuvc/gpuvc/kind/localcluster"
	"github.com/gpuvc/gpuvc/kind/localstack"
)

// The real node is the system pool (kind/localstack's): vCluster control planes
// and the gpuvc manager run there for real, and so do the workloads of teams
// whose pool is "system". It carries simulated GPUs (a real kubelet, a
// simulated device plugin) so that GPU pods of those teams really run too. The
// GPU pools stay kwok nodes.
const (
	realNodeName = localstack.RealNodeName
	realPool     = localstack.RealPool
	// gpuvcNamespace is where `gpuvc install` puts the manager.
	gpuvcNamespace = "gpuvc-system"
)

// suiteGPUs are the real node's simulated GPUs in the suite: the stack's
// default with one more whole GPU for the device plugin (three whole, two in MIG
// mode; DRA's three as before), so that TestIdleGPUPodsOnTheRealNode's two teams
// run their three GPU pods in one idle window (MIG slices report no utilization).
var suiteGPUs = func() inventory.Spec {
	s := localstack.DefaultGPUs
	s.Count++
	s.MIG = slices.Insert(slices.Clone(s.MIG), s.Count-1-s.DRA, "all-disabled")
	return s
}()

// realBackend is the local stack `gpuvc dev cluster up` runs (kind/localstack:
// the local control plane, kwok GPU pools and one real node with kubelet,
// containerd, runc, bridge CNI, kube-proxy and kube-router), attached to the
// test process, with gpuvc installed from its chart: the manager and webhook
// run as pods, every team's vCluster control plane runs for real and exports a
// kubeconfig that works from this machine.
type realBackend struct {
	stack *localstack.Stack
	// shim is the containerd shim executable: no process may run it after Stop.
	shim     string
	gpuvcBin string
}

// startReal builds (once, cached) what the stack runs and brings it up. The
// node's GPUs are served from the test process rather than by a GPU agent
// daemon: tests set and clear the node's health taint themselves.
func startReal(ctx context.Context, gpuvcBin string) (_ Backend, err error) {
	b := &realBackend{gpuvcBin: gpuvcBin}
	defer func() {
		if err != nil {
			err = errors.Join(err, b.Stop())
		}
	}()
	began := time.Now()
	if err := ensureImageBinaries(ctx); err != nil {
		return nil, err
	}
	nodeBins, err := localcp.EnsureNodeBinaries(ctx, logWriter)
	if err != nil {
		return nil, err
	}
	b.shim = nodeBins.ContainerdShim
	dir, err := os.MkdirTemp("", "gpuvc-e2e-stack-")
	if err != nil {
		return nil, err
	}
	if b.stack, err = localstack.Up(ctx, localstack.Options{Dir: dir, Gpuvc: gpuvcBin, Attached: true, InProcessGPUs: true, GPUs: &suiteGPUs, Log: logWriter}); err != nil {
		_ = os.Remove(dir) // left only when Up failed before it started anything: empty
		return nil, err
	}
	if err := b.install(ctx); err != nil {
		return nil, err
	}
	fmt.Fprintf(logWriter, "e2e: real backend ready in %v\n", time.Since(began).Round(time.Second))
	return b, nil
}

// realValues are the chart values of the suite: those of the Docker-less trial
// and `gpuvc dev cluster` (localstack.Values), as a values file.
func realValues() string {
	b, err := yaml.Marshal(localstack.Values())
	if err != nil {
		panic(err) // plain maps of strings, numbers and booleans always marshal
	}
	return string(b)
}

// install runs `gpuvc install` as a platform engineer would.
func (b *realBackend) install(ctx context.Context) error {
	dir, err := os.MkdirTemp("", "gpuvc-e2e-values-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	values := filepath.Join(dir, "values.yaml")
	if err := os.WriteFile(values, []byte(realValues()), 0o644); err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, b.gpuvcBin, "--kubeconfig", b.Kubeconfig(),
		"install", "-n", gpuvcNamespace, "-f", values, "--wait", "--timeout", "5m")
	cmd.Stdout, cmd.Stderr = logWriter, logWriter
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("gpuvc install: %w", err)
	}
	return nil
}

func (b *realBackend) Name() string {
	return "local control plane with a real node (" + realNodeName + ") and kwok GPU nodes"
}
func (b *realBackend) Kubeconfig() string           { return b.stack.ControlPlane.Kubeconfig }
func (b *realBackend) Config() *rest.Config         { return b.stack.ControlPlane.Config }
func (b *realBackend) Client() kubernetes.Interface { return b.stack.ControlPlane.Client }
func (b *realBackend) RunsContainers() bool         { return true }

// SystemNodeCommand runs on this machine: the real node's daemons are its processes.
func (b *realBackend) SystemNodeCommand(ctx context.Context, name string, args ...string) (*exec.Cmd, error) {
	return exec.CommandContext(ctx, name, args...), nil
}

// ExportKubeconfig waits for the team's vCluster to export its kubeconfig.
func (b *realBackend) ExportKubeconfig(ctx context.Context, team string) error {
	return waitForVClusterKubeconfig(ctx, b.Client(), team, 3*time.Minute)
}

// Stop removes the stack — the node (every pod, mount, cgroup and rule with it),
// the control plane and the machine's node slot — then checks that no process
// of them survived, containers' shims included.
func (b *realBackend) Stop() error {
	pids := map[string]int{}
	var errs []error
	if b.stack != nil {
		if b.stack.Node != nil {
			for c, pid := range b.stack.Node.PIDs() {
				pids[string(c)] = pid
			}
		}
		if b.stack.Addons != nil {
			for c, pid := range b.stack.Addons.PIDs() {
				pids[c] = pid
			}
		}
		for c, pid := range b.stack.ControlPlane.PIDs() {
			pids[c] = pid
		}
		errs = append(errs, b.stack.Stop())
	}
	for name, pid := range pids {
		if localcluster.Alive(pid) {
			errs = append(errs, fmt.Errorf("%s (pid %d) still runs after Stop", name, pid))
		}
	}
	if b.shim != "" {
		errs = append(errs, noProcessOf(b.shim))
	}
	return errors.Join(errs...)
}

// noProcessOf fails if a process runs the executable exe.
func noProcessOf(exe string) error {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return err
	}
	for _, e := range entries {
		if path, err := os.Readlink(filepath.Join("/proc", e.Name(), "exe")); err == nil && path == exe {
			return fmt.Errorf("pid %s (%s) still runs after Stop", e.Name(), exe)
		}
	}
	return nil
}
