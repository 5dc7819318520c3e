package suite

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/gpuvc/gpuvc/e2e/localcp"
	"github.com/gpuvc/gpuvc/gpu/inventory"
	"github.com/gpuvc/gpuvc/kind/localaddons"
	"github.com/gpuvc/gpuvc/kind/localcluster"
	"github.com/gpuvc/gpuvc/kind/localcluster/images"
	"github.com/gpuvc/gpuvc/kind/localnode"
	"github.com/gpuvc/gpuvc/kind/localstack"
	"github.com/gpuvc/gpuvc/kind/nodepool"
)

// The real node is the system pool: vCluster control planes and the gpuvc manager
// run there for real, and so do the workloads of teams whose pool is "system". It
// carries simulated GPUs (a real kubelet, a simulated device plugin) so that GPU
// pods of those teams really run too. The GPU pools stay kwok nodes.
const (
	realNodeName = "system-0"
	realPool     = "system"
	// gpuvcNamespace is where `gpuvc install` puts the manager.
	gpuvcNamespace = "gpuvc-system"
)

// realNodeGPUs are the simulated GPUs of the real node: two whole A100-80GB and
// two in MIG mode with the balanced layout.
var realNodeGPUs = inventory.Spec{
	Product: nodepool.ProductA100_80GB, Count: 4,
	MIG: []string{"all-disabled", "all-disabled", "all-balanced", "all-balanced"},
}

// realBackend is the local control plane with one real node (kubelet, containerd,
// runc, bridge CNI, kube-proxy, kube-router) and gpuvc installed from its chart:
// the manager and webhook run as pods, every team's vCluster control plane runs
// for real and exports a kubeconfig that works from this machine.
type realBackend struct {
	host *localnode.Host
	cp   *localcluster.ControlPlane
	node *localnode.Node
	// addons are the storage provisioner and metrics-server (addons.go).
	addons *localaddons.Addons
	// shim is the containerd shim executable: no process may run it after Stop.
	shim     string
	gpuvcBin string
}

// realNodeUnavailable says why this machine cannot run a real node, or "".
func realNodeUnavailable() string {
	if os.Geteuid() != 0 {
		return "not root (containerd, runc, cgroups and iptables need it)"
	}
	return ""
}

func startReal(ctx context.Context, gpuvcBin string) (_ Backend, err error) {
	b := &realBackend{gpuvcBin: gpuvcBin}
	defer func() {
		if err != nil {
			err = errors.Join(err, b.Stop())
		}
	}()
	began := time.Now()
	tars, err := realImages(ctx, gpuvcBin)
	if err != nil {
		return nil, err
	}
	nodeBins, err := localcp.EnsureNodeBinaries(ctx, logWriter)
	if err != nil {
		return nil, err
	}
	b.shim = nodeBins.ContainerdShim
	// The control plane first, then the node's slot: every package that runs a real
	// node takes the two locks in this order.
	if b.cp, err = localcp.Start(ctx, localcluster.Options{NodeIP: localnode.NodeIP, Pools: gpuPools(), Log: logWriter}); err != nil {
		return nil, err
	}
	if b.host, err = localnode.Acquire(ctx, logWriter); err != nil {
		return nil, err
	}
	system := nodepool.Pool{Name: realPool}
	gpus := realNodeGPUs
	if b.node, err = localnode.Start(ctx, b.cp, nodeBins, localnode.Options{
		Name:          realNodeName,
		Labels:        system.Labels(nodepool.Node{Name: realNodeName}),
		Images:        tars,
		PauseImage:    images.PauseRef,
		GPUs:          &gpus,
		NetworkPolicy: true,
		Host:          b.host,
		Log:           logWriter,
	}); err != nil {
		return nil, err
	}
	if b.addons, err = startAddons(ctx, b.cp); err != nil {
		return nil, err
	}
	if err := b.install(ctx); err != nil {
		return nil, err
	}
	fmt.Fprintf(logWriter, "e2e: real backend ready in %v\n", time.Since(began).Round(time.Second))
	return b, nil
}

// gpuPools are the default pools without the system pool, whose node is real.
func gpuPools() []nodepool.Pool {
	var pools []nodepool.Pool
	for _, p := range nodepool.Default() {
		if p.Name != realPool {
			pools = append(pools, p)
		}
	}
	return pools
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
	cmd := exec.CommandContext(ctx, b.gpuvcBin, "--kubeconfig", b.cp.Kubeconfig,
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
func (b *realBackend) Kubeconfig() string           { return b.cp.Kubeconfig }
func (b *realBackend) Config() *rest.Config         { return b.cp.Config }
func (b *realBackend) Client() kubernetes.Interface { return b.cp.Client }
func (b *realBackend) RunsContainers() bool         { return true }

// SystemNodeCommand runs on this machine: the real node's daemons are its processes.
func (b *realBackend) SystemNodeCommand(ctx context.Context, name string, args ...string) (*exec.Cmd, error) {
	return exec.CommandContext(ctx, name, args...), nil
}

// ExportKubeconfig waits for the team's vCluster to export its kubeconfig.
func (b *realBackend) ExportKubeconfig(ctx context.Context, team string) error {
	return waitForVClusterKubeconfig(ctx, b.cp.Client, team, 3*time.Minute)
}

// Stop stops the node (every pod, mount, cgroup and rule with it), the control
// plane, and frees the machine's node slot; then it checks that no process of
// them survived, containers' shims included.
func (b *realBackend) Stop() error {
	pids := map[string]int{}
	var errs []error
	if b.addons != nil {
		for c, pid := range b.addons.PIDs() {
			pids[c] = pid
		}
		errs = append(errs, b.addons.Stop())
	}
	if b.node != nil {
		for c, pid := range b.node.PIDs() {
			pids[string(c)] = pid
		}
		errs = append(errs, b.node.Stop())
	}
	if b.cp != nil {
		for c, pid := range b.cp.PIDs() {
			pids[c] = pid
		}
		errs = append(errs, b.cp.Stop())
	}
	if b.host != nil {
		errs = append(errs, b.host.Release())
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
