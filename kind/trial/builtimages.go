package trial

import (
	"fmt"

	"github.com/gpuvc/gpuvc/charts/installer"
	"github.com/gpuvc/gpuvc/kind/localcluster"
	"github.com/gpuvc/gpuvc/kind/localcluster/images"
)

// BuiltImageValues are chart values for gpuvc on a kind cluster whose images are
// built in Go and loaded into its nodes (images.ForRealNode) rather than pulled:
// vCluster's chart from inside the gpuvc image, and vClusters running the
// Kubernetes version whose distro image is loaded.
func BuiltImageValues() map[string]any {
	return map[string]any{"vcluster": map[string]any{
		"chart": map[string]any{"dir": images.VClusterChartInImage},
		"values": map[string]any{"controlPlane": map[string]any{"distro": map[string]any{
			"k8s": map[string]any{"image": map[string]any{"tag": localcluster.KubernetesVersion}},
		}}},
	}}
}

// UseBuiltImages points opts at images built in Go instead of `docker build` and
// registries: the real node's set (gpuvc of gpuvcBinary with vCluster's chart
// inside, vCluster's syncer and distro, CoreDNS, pause, the demo pods' workload)
// from the prebuilt binaries (`make binaries`), loaded into every node with
// kind's image loading, and the chart values that use them. Values already in
// opts win over BuiltImageValues.
func UseBuiltImages(opts *Options, gpuvcBinary string) error {
	if len(opts.ImageArchives) > 0 {
		return fmt.Errorf("image archives given (%d) and images to build: choose one", len(opts.ImageArchives))
	}
	m, err := localcluster.LoadManifest()
	if err != nil {
		return fmt.Errorf("building the trial's images: %w", err)
	}
	tars, err := images.ForRealNode(m, gpuvcBinary, images.DefaultDir())
	if err != nil {
		return fmt.Errorf("building the trial's images: %w", err)
	}
	opts.Image, opts.WorkloadImage, opts.ImageArchives = images.GpuvcRef, images.WorkloadRef, tars
	opts.Values = installer.Overlay(BuiltImageValues(), opts.Values)
	return nil
}
