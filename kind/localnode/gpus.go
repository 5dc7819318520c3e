package localnode

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2/textlogger"

	"github.com/gpuvc/gpuvc/api/contract"
	"github.com/gpuvc/gpuvc/gpu/dra"
	"github.com/gpuvc/gpuvc/gpu/inventory"
	"github.com/gpuvc/gpuvc/gpu/nodeagent"
	"github.com/gpuvc/gpuvc/gpu/nodeagent/deviceplugin"
	"github.com/gpuvc/gpuvc/gpu/usage"
)

// serveGPUs starts serving the simulated inventory to the kubelet, in this
// process: its device-plugin GPUs through the device-plugin API on the
// kubelet's fixed device-plugin folder, those the spec hands to DRA
// (Spec.DRA) through the DRA kubelet plugin (gpu/dra) registered in the
// kubelet's root folder, with CDI specs in containerd's CDI folder. Started
// before the kubelet, both register the moment the kubelet listens (the
// device plugin re-serves when the kubelet wipes its folder at start). The
// DRA plugin logs to logs/gpu-dra.log.
func (n *Node) serveGPUs(context.Context) error {
	spec := *n.opts.GPUs
	if spec.Seed == "" {
		spec.Seed = n.Name
	}
	inv, err := inventory.Simulate(spec)
	if err != nil {
		return fmt.Errorf("simulating GPUs: %w", err)
	}
	n.Inventory = inv
	if err := os.MkdirAll(deviceplugin.DefaultDir, 0o755); err != nil {
		return err
	}
	if n.opts.GPUAgent != "" {
		return n.startGPUAgent(spec)
	}
	ctx, cancel := context.WithCancel(context.Background())
	n.gpuDone = make(chan error, 3)
	servers := 0
	serve := func(what string, run func() error) {
		servers++
		go func() {
			err := run()
			if err != nil {
				err = fmt.Errorf("%s: %w", what, err)
			}
			n.gpuDone <- err
		}()
	}
	n.stopGPUs = func() {
		cancel()
		for range servers {
			if err := <-n.gpuDone; err != nil {
				n.logf("%v", err)
			}
		}
	}
	if len(deviceplugin.Resources(inv)) > 0 {
		serve("device plugin", func() error {
			return deviceplugin.Serve(ctx, deviceplugin.Options{Dir: deviceplugin.DefaultDir, Inventory: inv})
		})
	}
	if err := n.writeUtilizationFile(); err != nil {
		cancel()
		return err
	}
	serve("GPU utilization metrics", func() error {
		read := usage.Simulated{Inventory: inv, Path: GPUUtilizationFile(n.Dir)}.Read
		return nodeagent.ServeUtilization(ctx, GPUAgentMetricsAddress(), n.Name, n.PodResourcesSocket(), read, logr.Discard())
	})
	if len(dra.Devices(inv)) > 0 {
		logFile, err := os.OpenFile(n.path("logs", "gpu-dra.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			cancel()
			return err
		}
		logger := textlogger.NewLogger(textlogger.NewConfig(textlogger.Output(logFile), textlogger.Verbosity(4)))
		serve("DRA kubelet plugin", func() error {
			defer logFile.Close()
			return dra.Serve(logr.NewContext(ctx, logger), dra.Options{NodeName: n.Name, Client: n.cp.Client, Inventory: inv, KubeletDir: n.kubeletDir(), CDIDir: n.cdiDir()})
		})
	}
	return nil
}

// kubeletDir is the kubelet's root folder (--root-dir); cdiDir is
// containerd's CDI spec folder (cdi_spec_dirs).
func (n *Node) kubeletDir() string { return n.path("kubelet") }
func (n *Node) cdiDir() string     { return n.path("cdi") }

// PodResourcesSocket is the kubelet's pod-resources socket (under its root
// folder): which container holds which device, as the kubelet assigned them.
func (n *Node) PodResourcesSocket() string {
	return filepath.Join(n.kubeletDir(), "pod-resources", "kubelet.sock")
}

// waitDRA waits until the node's ResourceSlices of the DRA driver publish
// every device of the GPUs the spec hands to DRA.
func (n *Node) waitDRA(ctx context.Context) error {
	want := len(dra.Devices(n.Inventory))
	return n.poll(ctx, "the DRA ResourceSlice of the simulated GPUs", func(ctx context.Context) (bool, error) {
		if err := n.gpuServerEnded(); err != nil {
			return false, err
		}
		slices, err := n.cp.Client.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{
			FieldSelector: "spec.nodeName=" + n.Name + ",spec.driver=" + contract.DRADriver,
		})
		if err != nil {
			return false, err
		}
		got := 0
		for _, s := range slices.Items {
			got += len(s.Spec.Devices)
		}
		if got != want {
			return false, fmt.Errorf("%d devices published, want %d", got, want)
		}
		return true, nil
	})
}

// gpuServerEnded is the error of an in-process GPU server that ended (nil
// while they all run, or when the GPU agent serves them).
func (n *Node) gpuServerEnded() error {
	select {
	case err := <-n.gpuDone:
		n.gpuDone <- err // for stopGPUs
		return errors.Join(errors.New("a GPU server stopped"), err)
	default:
		return nil
	}
}

// waitGPUs labels the node as GPU Feature Discovery would and waits until its
// allocatable lists every GPU resource (mixed MIG strategy).
func (n *Node) waitGPUs(ctx context.Context) error {
	want, err := inventory.Capacity(n.Inventory, inventory.StrategyMixed)
	if err != nil {
		return err
	}
	labels, err := inventory.Labels(n.Inventory, inventory.StrategyMixed)
	if err != nil {
		return err
	}
	if err := n.patchLabels(ctx, labels); err != nil {
		return err
	}
	return n.poll(ctx, "GPU resources in the node's allocatable", func(ctx context.Context) (bool, error) {
		if err := n.gpuServerEnded(); err != nil {
			return false, err
		}
		node, err := n.cp.Client.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for res, count := range want {
			q, ok := node.Status.Allocatable[corev1.ResourceName(res)]
			if !ok || q.Value() != count {
				return false, fmt.Errorf("allocatable %s = %v, want %d", res, q.String(), count)
			}
		}
		return true, nil
	})
}

// GPUAgentMetricsPort is where the node's GPU agent serves /metrics, on the node
// IP (the chart's agent.metrics.port): the trial's Prometheus scrapes it there.
const GPUAgentMetricsPort = 9402

// GPUAgentMetricsAddress is the node GPU agent's metrics endpoint, host:port.
func GPUAgentMetricsAddress() string {
	return net.JoinHostPort(NodeIP.String(), strconv.Itoa(GPUAgentMetricsPort))
}

// GPUUtilizationFile is the file that sets the node's simulated GPUs'
// utilization (`gpuvc agent --simulate-utilization`, usage.Simulated): a line
// "<gpu index or UUID> <percent>" per GPU, read at every scrape of
// GPUAgentMetricsAddress, which exports it with the pod the kubelet gave each
// GPU (gpuvc_team_gpu_utilization). A GPU it does not name reports no
// utilization, so it is never idle; the node starts with the file empty.
func GPUUtilizationFile(nodeDir string) string { return filepath.Join(nodeDir, "gpu-utilization") }

// SetGPUUtilization replaces the utilization file with these GPUs' (index or
// UUID → percent) in one rename, so a scrape never reads half of it.
func SetGPUUtilization(nodeDir string, percent map[string]int) error {
	var b strings.Builder
	b.WriteString("# <gpu index or UUID> <percent>\n")
	for _, gpu := range slices.Sorted(maps.Keys(percent)) {
		fmt.Fprintf(&b, "%s %d\n", gpu, percent[gpu])
	}
	tmp := GPUUtilizationFile(nodeDir) + ".new"
	if err := os.WriteFile(tmp, []byte(b.String()), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, GPUUtilizationFile(nodeDir))
}

func (n *Node) writeUtilizationFile() error {
	return os.WriteFile(GPUUtilizationFile(n.Dir), nil, 0o644)
}

// GPUFailuresFile is the file the node's GPU agent follows for injected GPU
// failures (`gpuvc agent --inject-gpu-failures`; docs/agent.md): a line such as
// "3 xid=79" appended to it fails simulated GPU 3.
func GPUFailuresFile(nodeDir string) string { return filepath.Join(nodeDir, "gpu-failures") }

// startGPUAgent serves the simulated GPUs from a `gpuvc agent` daemon of the node
// (same spec and seed, hence the same device IDs as n.Inventory), so they outlive
// this program with a detached node: its device plugin and, for the GPUs the
// spec hands to DRA, its DRA kubelet plugin. It publishes the inventory as an admin: the
// node's own credentials may not write every label the agent sets. It watches
// GPUFailuresFile for injected failures and serves its metrics (GPU health, and
// the utilization GPUUtilizationFile sets with the pods the kubelet's
// pod-resources socket names) on GPUAgentMetricsAddress.
func (n *Node) startGPUAgent(spec inventory.Spec) error {
	kubeconfig := n.path("gpu-agent.kubeconfig")
	if err := n.cp.WriteKubeconfig(kubeconfig, "gpuvc:gpu-agent", "system:masters"); err != nil {
		return err
	}
	failures := GPUFailuresFile(n.Dir)
	if err := os.WriteFile(failures, nil, 0o600); err != nil {
		return err
	}
	if err := n.writeUtilizationFile(); err != nil {
		return err
	}
	args := []string{
		"agent", "--kubeconfig", kubeconfig, "--node-name", n.Name, "--simulate", spec.Flag(),
		"--inject-gpu-failures", failures, "--metrics-bind-address", GPUAgentMetricsAddress(),
		"--simulate-utilization", GPUUtilizationFile(n.Dir), "--pod-resources-socket", n.PodResourcesSocket(),
	}
	if spec.DRA < spec.Count {
		args = append(args, "--device-plugin", "--device-plugin-dir", deviceplugin.DefaultDir)
	}
	if spec.DRA > 0 {
		args = append(args, "--dra", "--kubelet-dir", n.kubeletDir(), "--cdi-dir", n.cdiDir())
	}
	return n.start(GPUAgent, n.opts.GPUAgent, args, nil)
}
