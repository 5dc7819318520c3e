package localstack

import (
	"strings"

	"github.com/gpuvc/gpuvc/kind/localcluster"
	"github.com/gpuvc/gpuvc/kind/localcluster/images"
	"github.com/gpuvc/gpuvc/kind/localnode"
)

// Values are the chart values that install gpuvc on the stack's real node (as
// `gpuvc install -f` reads them): the gpuvc image imported into the node (never
// pulled), one manager replica rotating its own webhook certificate (no
// cert-manager here), vCluster's chart from inside that image (no chart
// repository is reachable), ephemeral vClusters running the Kubernetes version
// built here, team kubeconfigs pointing at each vCluster's ClusterIP (the node
// runs kube-proxy, so ClusterIPs route from this machine), and no agent
// DaemonSet: the node's own GPU agent daemon serves and publishes its GPUs;
// the manager scraping that daemon's metrics at the node's address (GPU
// utilization for spec.idle.gpuPods); the host's StorageClasses shown to teams; StatefulSet pods' hosts rewrite
// runs from the workload image. vcluster.dra is on: the real node serves GPUs
// through DRA too (gpu/dra), so a Team with spec.dra must be able to install its
// vCluster (docs/dra.md).
func Values() map[string]any {
	repo, tag, _ := strings.Cut(images.GpuvcRef, ":")
	workloadImage, workloadTag, _ := strings.Cut(images.WorkloadRef, ":")
	workloadRegistry, workloadRepository, _ := strings.Cut(workloadImage, "/")
	return map[string]any{
		"image": map[string]any{"repository": repo, "tag": tag, "pullPolicy": "Never"},
		"manager": map[string]any{
			"replicas":            1,
			"leaderElection":      map[string]any{"enabled": false},
			"podDisruptionBudget": map[string]any{"enabled": false},
			"teamServerURL":       "https://{{.ServiceIP}}",
			// The node's GPU agent (or, with InProcessGPUs, the test process)
			// serves the simulated GPUs' utilization there, with the pods
			// the kubelet gave them: spec.idle.gpuPods is applied.
			"agentMetricsAddresses": []any{localnode.GPUAgentMetricsAddress()},
		},
		"vcluster": map[string]any{
			"chart":     map[string]any{"dir": images.VClusterChartInImage},
			"ephemeral": true,
			// Teams see the host's StorageClasses (`standard`, local-path), as on
			// a cluster of their own.
			"hostStorageClasses": true,
			"dra":                true,
			"values": map[string]any{
				// vCluster rewrites a StatefulSet pod's /etc/hosts with an init
				// container (sed) from mirror.gcr.io/library/alpine, which no node
				// here can pull: the busybox workload image on the node does it.
				"sync": map[string]any{"toHost": map[string]any{"pods": map[string]any{"rewriteHosts": map[string]any{
					"initContainer": map[string]any{"image": map[string]any{"registry": workloadRegistry, "repository": workloadRepository, "tag": workloadTag}},
				}}}},
				"controlPlane": map[string]any{
					"distro": map[string]any{
						"k8s": map[string]any{"image": map[string]any{"tag": localcluster.KubernetesVersion}},
					},
				},
			},
		},
		"certManager": map[string]any{"enabled": false},
		"agent":       map[string]any{"enabled": false},
	}
}
