package suite

import (
	"context"
	"fmt"
	"io/fs"
	"path/filepath"

	"github.com/gpuvc/gpuvc/e2e/localcp"
	"github.com/gpuvc/gpuvc/kind/localcluster"
	"github.com/gpuvc/gpuvc/kind/localcluster/images"
	"github.com/gpuvc/gpuvc/vclusters/vclusterstest"
)

// vclusterChartInImage is where the gpuvc image used by the suite carries
// vCluster's chart: the manager pod installs it from there (no chart repository
// is reachable here), as an air-gapped cluster would.
const vclusterChartInImage = "/charts/vcluster"

// realImages builds (once, cached by content) the images the real node runs:
// pause, the gpuvc image with vCluster's chart inside, vCluster's syncer and
// distro images, CoreDNS and a busybox workload. It returns the tarballs.
func realImages(ctx context.Context, gpuvcBin string) ([]string, error) {
	cpBins, err := localcp.EnsureBinaries(ctx, logWriter)
	if err != nil {
		return nil, err
	}
	imgBins, err := localcp.EnsureImageBinaries(ctx, logWriter)
	if err != nil {
		return nil, err
	}
	chart, err := vclusterstest.ChartDir(ctx)
	if err != nil {
		return nil, err
	}
	dir := images.DefaultDir()
	pause, err := images.Pause(ctx, dir)
	if err != nil {
		return nil, err
	}
	gpuvc := images.Gpuvc(images.GpuvcRef, gpuvcBin)
	chartFiles, err := filesUnder(chart, vclusterChartInImage)
	if err != nil {
		return nil, err
	}
	gpuvc.Files = append(gpuvc.Files, chartFiles...)
	distro := images.KubernetesInputs{
		APIServer:         cpBins.APIServer,
		ControllerManager: cpBins.ControllerManager,
		Scheduler:         cpBins.Scheduler,
		Kine:              imgBins.Kine,
	}
	specs := []images.Spec{
		pause,
		gpuvc,
		images.VCluster(images.VClusterInputs{Binary: imgBins.VCluster, Runs: distro.Binaries()}),
		images.Kubernetes(localcluster.KubernetesVersion, distro),
		images.CoreDNS(imgBins.CoreDNS),
		images.Workload(""),
	}
	var tars []string
	for _, s := range specs {
		tar, err := images.Build(s, dir)
		if err != nil {
			return nil, fmt.Errorf("building image %s: %w", s.Ref, err)
		}
		tars = append(tars, tar)
	}
	return tars, nil
}

// filesUnder lists every file below src as image files below dest.
func filesUnder(src, dest string) ([]images.File, error) {
	var files []images.File
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		files = append(files, images.File{Source: p, Path: filepath.Join(dest, rel), Mode: 0o644})
		return nil
	})
	return files, err
}
