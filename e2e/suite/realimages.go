package suite

import (
	"context"

	"github.com/gpuvc/gpuvc/e2e/localcp"
	"github.com/gpuvc/gpuvc/kind/localcluster"
	"github.com/gpuvc/gpuvc/kind/localcluster/images"
)

// vclusterChartInImage is where the gpuvc image used by the suite carries
// vCluster's chart.
const vclusterChartInImage = images.VClusterChartInImage

// realImages builds (once, cached by content) the images the real node runs —
// the same as the Docker-less trial's (images.ForRealNode) — after building any
// binary they need that is not cached yet. It returns the tarballs.
func realImages(ctx context.Context, gpuvcBin string) ([]string, error) {
	if err := ensureImageBinaries(ctx); err != nil {
		return nil, err
	}
	m, err := localcluster.LoadManifest()
	if err != nil {
		return nil, err
	}
	return images.ForRealNode(m, gpuvcBin, images.DefaultDir())
}

// ensureImageBinaries builds (once, cached) the control plane's binaries and
// those of vCluster's images that are not built yet, and lists them in the
// manifest, where the stack and images.ForRealNode find them.
func ensureImageBinaries(ctx context.Context) error {
	if _, err := localcp.EnsureBinaries(ctx, logWriter); err != nil {
		return err
	}
	_, err := localcp.EnsureImageBinaries(ctx, logWriter)
	return err
}
