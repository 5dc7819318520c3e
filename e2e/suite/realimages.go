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
	if _, err := localcp.EnsureBinaries(ctx, logWriter); err != nil {
		return nil, err
	}
	if _, err := localcp.EnsureImageBinaries(ctx, logWriter); err != nil {
		return nil, err
	}
	m, err := localcluster.LoadManifest()
	if err != nil {
		return nil, err
	}
	return images.ForRealNode(m, gpuvcBin, images.DefaultDir())
}
