package images

import (
	"fmt"
	"io/fs"
	"path/filepath"

	"github.com/gpuvc/gpuvc/kind/localcluster"
)

// VClusterChartInImage is where the gpuvc image of a real node carries vCluster's
// chart: the manager installs it from there (no chart repository is reachable
// here), as an air-gapped cluster would (chart value vcluster.chart.dir).
const VClusterChartInImage = "/charts/vcluster"

// ForRealNode builds (once, cached by content) the images a real node runs for
// gpuvc: pause, the gpuvc image of gpuvcBin with vCluster's chart inside,
// vCluster's syncer and distro images, CoreDNS (vCluster's, and the host's
// cluster DNS), metrics-server and a busybox workload (WorkloadRef). Every binary and the chart come from the manifest of prebuilt
// binaries; nothing is compiled. It returns the tarballs, for the node to import.
func ForRealNode(m *localcluster.Manifest, gpuvcBin, dir string) ([]string, error) {
	cpBins, err := m.ControlPlane()
	if err != nil {
		return nil, err
	}
	imgBins, err := m.Images()
	if err != nil {
		return nil, err
	}
	chart, err := m.File(localcluster.FileVClusterChart)
	if err != nil {
		return nil, err
	}
	pause, err := m.File(localcluster.FilePause)
	if err != nil {
		return nil, err
	}
	metricsServer, err := m.Tool(localcluster.MetricsServerTool)
	if err != nil {
		return nil, err
	}
	gpuvc := Gpuvc(GpuvcRef, gpuvcBin)
	chartFiles, err := FilesUnder(chart, VClusterChartInImage)
	if err != nil {
		return nil, err
	}
	gpuvc.Files = append(gpuvc.Files, chartFiles...)
	distro := KubernetesInputs{
		APIServer:         cpBins.APIServer,
		ControllerManager: cpBins.ControllerManager,
		Scheduler:         cpBins.Scheduler,
		Kine:              imgBins.Kine,
	}
	specs := []Spec{
		PauseSpec(pause),
		gpuvc,
		VCluster(VClusterInputs{Binary: imgBins.VCluster, Runs: distro.Binaries()}),
		Kubernetes(localcluster.KubernetesVersion, distro),
		CoreDNS(imgBins.CoreDNS),
		MetricsServer(metricsServer),
		Workload(""),
	}
	var tars []string
	for _, s := range specs {
		tar, err := Build(s, dir)
		if err != nil {
			return nil, fmt.Errorf("building image %s: %w", s.Ref, err)
		}
		tars = append(tars, tar)
	}
	return tars, nil
}

// FilesUnder lists every file below src as image files below dest.
func FilesUnder(src, dest string) ([]File, error) {
	var files []File
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		files = append(files, File{Source: p, Path: filepath.Join(dest, rel), Mode: 0o644})
		return nil
	})
	return files, err
}
