package kindnode

import (
	"github.com/gpuvc/gpuvc/kind/localcluster"
	"github.com/gpuvc/gpuvc/kind/localcluster/images"
)

// OfflineValues are chart values for gpuvc on a kind cluster that cannot reach a
// chart repository or a registry, with the images of images.ForRealNode loaded
// into its nodes: vCluster's chart from inside the gpuvc image, and vClusters
// running the Kubernetes version whose distro image is loaded.
func OfflineValues() map[string]any {
	return map[string]any{"vcluster": map[string]any{
		"chart": map[string]any{"dir": images.VClusterChartInImage},
		"values": map[string]any{"controlPlane": map[string]any{"distro": map[string]any{
			"k8s": map[string]any{"image": map[string]any{"tag": localcluster.KubernetesVersion}},
		}}},
	}}
}
