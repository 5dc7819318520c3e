package localstack

import (
	"strings"

	"github.com/gpuvc/gpuvc/kind/localcluster"
	"github.com/gpuvc/gpuvc/kind/localcluster/images"
)

// Values are the chart values that install gpuvc on the stack's real node (as
// `gpuvc install -f` reads them): the gpuvc image imported into the node (never
// pulled), one manager replica rotating its own webhook certificate (no
// cert-manager here), vCluster's chart from inside that image (no chart
// repository is reachable), ephemeral vClusters running the Kubernetes version
// built here, team kubeconfigs pointing at each vCluster's ClusterIP (the node
// runs kube-proxy, so ClusterIPs route from this machine), and no agent
// DaemonSet: the node's own GPU agent daemon serves and publishes its GPUs.
func Values() map[string]any {
	repo, tag, _ := strings.Cut(images.GpuvcRef, ":")
	return map[string]any{
		"image": map[string]any{"repository": repo, "tag": tag, "pullPolicy": "Never"},
		"manager": map[string]any{
			"replicas":            1,
			"leaderElection":      map[string]any{"enabled": false},
			"podDisruptionBudget": map[string]any{"enabled": false},
			"teamServerURL":       "https://{{.ServiceIP}}",
		},
		"vcluster": map[string]any{
			"chart":     map[string]any{"dir": images.VClusterChartInImage},
			"ephemeral": true,
			"values": map[string]any{
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
