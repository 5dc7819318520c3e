package localnode

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuvc/gpuvc/gpu/inventory"
	"github.com/gpuvc/gpuvc/gpu/nodeagent/deviceplugin"
)

// serveGPUs starts serving the simulated inventory to the kubelet through the
// device-plugin API, in this process, on the kubelet's fixed device-plugin
// folder. Started before the kubelet, the plugin registers the moment the
// kubelet listens (it re-serves when the kubelet wipes the folder at start).
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
	n.gpuDone = make(chan error, 1)
	n.stopGPUs = func() {
		cancel()
		if err := <-n.gpuDone; err != nil {
			n.logf("device plugin: %v", err)
		}
	}
	go func() {
		n.gpuDone <- deviceplugin.Serve(ctx, deviceplugin.Options{Dir: deviceplugin.DefaultDir, Inventory: inv})
	}()
	return nil
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
		select {
		case err := <-n.gpuDone:
			n.gpuDone <- err // for stopGPUs
			return false, errors.Join(errors.New("the device plugin stopped"), err)
		default:
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

// GPUFailuresFile is the file the node's GPU agent follows for injected GPU
// failures (`gpuvc agent --inject-gpu-failures`; docs/agent.md): a line such as
// "3 xid=79" appended to it fails simulated GPU 3.
func GPUFailuresFile(nodeDir string) string { return filepath.Join(nodeDir, "gpu-failures") }

// startGPUAgent serves the simulated GPUs from a `gpuvc agent` daemon of the node
// (same spec and seed, hence the same device IDs as n.Inventory), so they outlive
// this program with a detached node. It publishes the inventory as an admin: the
// node's own credentials may not write every label the agent sets. It watches
// GPUFailuresFile for injected failures and serves its metrics (GPU health) on
// GPUAgentMetricsAddress.
func (n *Node) startGPUAgent(spec inventory.Spec) error {
	kubeconfig := n.path("gpu-agent.kubeconfig")
	if err := n.cp.WriteKubeconfig(kubeconfig, "gpuvc:gpu-agent", "system:masters"); err != nil {
		return err
	}
	failures := GPUFailuresFile(n.Dir)
	if err := os.WriteFile(failures, nil, 0o600); err != nil {
		return err
	}
	args := []string{
		"agent", "--kubeconfig", kubeconfig, "--node-name", n.Name,
		"--simulate", spec.Flag(), "--device-plugin", "--device-plugin-dir", deviceplugin.DefaultDir,
		"--inject-gpu-failures", failures, "--metrics-bind-address", GPUAgentMetricsAddress(),
	}
	return n.start(GPUAgent, n.opts.GPUAgent, args, nil)
}
