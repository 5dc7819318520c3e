// Package trial is the kind trial of gpuvc: a kind cluster whose workers are
// labelled, tainted and named like gpuvc's simulated GPU pools (kind/nodepool),
// gpuvc installed from its chart with simulated GPUs served to the kubelets, two
// teams and GPU pods in their virtual clusters. kind is used as a Go library;
// every step needs a Docker engine, and Start and Up refuse at once without one.
package trial

import (
	"fmt"

	"sigs.k8s.io/kind/pkg/apis/config/v1alpha4"
	"sigs.k8s.io/yaml"

	"github.com/gpuvc/gpuvc/kind/nodepool"
)

// ClusterConfig returns the kind cluster of the trial: one control-plane node and a
// worker per node of the pools, registered under the node's name, carrying the
// pool's labels (pool, GFD-style GPU facts as the simulated agent publishes them,
// simulated) and, for GPU pools, the pool's NoSchedule taint. GPU capacity is not
// part of it: the simulated device plugin (gpuvc agent --simulate --device-plugin)
// advertises it once the chart runs on the workers.
func ClusterConfig(pools []nodepool.Pool) (*v1alpha4.Cluster, error) {
	if err := checkPools(pools); err != nil {
		return nil, err
	}
	cfg := &v1alpha4.Cluster{
		TypeMeta: v1alpha4.TypeMeta{Kind: "Cluster", APIVersion: "kind.x-k8s.io/v1alpha4"},
		Nodes:    []v1alpha4.Node{{Role: v1alpha4.ControlPlaneRole}},
	}
	for _, p := range pools {
		for _, n := range p.Nodes {
			labels, err := nodeLabels(p, n)
			if err != nil {
				return nil, err
			}
			patch, err := joinPatch(n.Name, p.Taints())
			if err != nil {
				return nil, fmt.Errorf("node %s of pool %s: %w", n.Name, p.Name, err)
			}
			cfg.Nodes = append(cfg.Nodes, v1alpha4.Node{
				Role: v1alpha4.WorkerRole, Labels: labels, KubeadmConfigPatches: []string{patch},
			})
		}
	}
	return cfg, nil
}

// joinPatch is the kubeadm JoinConfiguration patch that registers a worker under
// the pool node's name (kubeadm then runs the kubelet with --hostname-override;
// kind names containers <cluster>-worker, -worker2, ...) and with the pool's taints
// (kind's node type has labels but no taints). kind merges it (JSON merge patch)
// into the JoinConfiguration of whichever kubeadm API version it generates, since
// the patch names no apiVersion.
func joinPatch(name string, taints []nodepool.Taint) (string, error) {
	reg := map[string]any{"name": name}
	if len(taints) > 0 {
		list := make([]map[string]string, 0, len(taints))
		for _, t := range taints {
			list = append(list, map[string]string{"key": t.Key, "value": t.Value, "effect": t.Effect})
		}
		reg["taints"] = list
	}
	b, err := yaml.Marshal(map[string]any{"kind": "JoinConfiguration", "nodeRegistration": reg})
	return string(b), err
}

// YAML renders a cluster config the way `kind create cluster --config` reads it.
func YAML(cfg *v1alpha4.Cluster) ([]byte, error) { return yaml.Marshal(cfg) }
