// Package trial prepares the kind trial: a kind cluster whose workers are labelled
// and tainted like gpuvc's simulated GPU pools (kind/nodepool).
package trial

import (
	"fmt"
	"sort"
	"strings"

	"sigs.k8s.io/kind/pkg/apis/config/v1alpha4"
	"sigs.k8s.io/yaml"

	"github.com/gpuvc/gpuvc/kind/nodepool"
)

// ClusterConfig returns the kind cluster of the trial: one control-plane node and a
// worker per node of the pools, carrying the pool's labels (pool, GFD-style GPU
// facts, simulated) and, for GPU pools, the pool's NoSchedule taint. GPU capacity is
// not part of it: the simulated device plugin (gpuvc agent --simulate
// --device-plugin) advertises it once the chart runs on the workers.
func ClusterConfig(pools []nodepool.Pool) (*v1alpha4.Cluster, error) {
	if err := nodepool.Validate(pools); err != nil {
		return nil, err
	}
	cfg := &v1alpha4.Cluster{
		TypeMeta: v1alpha4.TypeMeta{Kind: "Cluster", APIVersion: "kind.x-k8s.io/v1alpha4"},
		Nodes:    []v1alpha4.Node{{Role: v1alpha4.ControlPlaneRole}},
	}
	for _, p := range pools {
		for _, n := range p.Nodes {
			worker := v1alpha4.Node{Role: v1alpha4.WorkerRole, Labels: kindLabels(p.Labels(n))}
			if taints := p.Taints(); len(taints) > 0 {
				patch, err := joinTaintsPatch(taints)
				if err != nil {
					return nil, fmt.Errorf("node %s of pool %s: %w", n.Name, p.Name, err)
				}
				worker.KubeadmConfigPatches = []string{patch}
			}
			cfg.Nodes = append(cfg.Nodes, worker)
		}
	}
	return cfg, nil
}

// kindLabels drops the kubernetes.io/ labels the kubelet sets itself (and
// NodeRestriction forbids it to set from flags).
func kindLabels(l map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range l {
		if !strings.Contains(k, "kubernetes.io/") {
			out[k] = v
		}
	}
	return out
}

// joinTaintsPatch is the kubeadm JoinConfiguration patch that registers a worker
// with taints (kind's node type has labels but no taints).
func joinTaintsPatch(taints []nodepool.Taint) (string, error) {
	var list []map[string]string
	for _, t := range taints {
		list = append(list, map[string]string{"key": t.Key, "value": t.Value, "effect": t.Effect})
	}
	sort.Slice(list, func(i, j int) bool { return list[i]["key"] < list[j]["key"] })
	b, err := yaml.Marshal(map[string]any{
		"kind":             "JoinConfiguration",
		"nodeRegistration": map[string]any{"taints": list},
	})
	return string(b), err
}

// YAML renders a cluster config the way `kind create cluster --config` reads it.
func YAML(cfg *v1alpha4.Cluster) ([]byte, error) { return yaml.Marshal(cfg) }
