package suite

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/gpuvc/gpuvc/kind/localcluster/images"
	"github.com/gpuvc/gpuvc/kind/trial"
	"github.com/gpuvc/gpuvc/vclusters/vclusterstest"
)

const (
	// kindClusterEnv names an existing kind cluster for the kind backend to reuse
	// (gpuvc is installed or upgraded on it; it is kept at the end), e.g. one left
	// by `make trial`. Unset, the backend creates kindDefaultCluster (reusing a
	// leftover of that name) and deletes it at the end.
	kindClusterEnv     = "GPUVC_KIND_CLUSTER"
	kindDefaultCluster = "gpuvc-e2e"
)

// kindBackend is the kind trial's cluster (kind/trial): a control plane and one
// worker per pool node (system-0, a100-0, h100-0), named, labelled and tainted
// like the pools, GPUs simulated by gpuvc's agent and device plugin so the real
// kubelets advertise them, gpuvc installed from its chart. Everything runs for
// real: vCluster control planes, the manager and webhook, team pods.
type kindBackend struct {
	opts    trial.Options
	cluster *trial.Cluster
	// owned: the backend created (or took over) the cluster and deletes it.
	owned bool
}

// startKind brings up the trial cluster through kind's Go library, with the
// images the suite needs built in Go (no docker build) and loaded into the nodes:
// the gpuvc image of the binary under test, carrying vCluster's chart as the real
// node's image does, and the busybox workload. vCluster's own images are pulled
// by the nodes from public registries.
func startKind(ctx context.Context, gpuvcBin string) (_ Backend, err error) {
	name, reuse := os.LookupEnv(kindClusterEnv)
	if !reuse || name == "" {
		name, reuse = kindDefaultCluster, false
	}
	if err := trial.RequireDocker(ctx, nil); err != nil {
		return nil, err
	}
	began := time.Now()
	tars, err := kindImages(ctx, gpuvcBin)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "gpuvc-e2e-kind-")
	if err != nil {
		return nil, err
	}
	b := &kindBackend{owned: !reuse, opts: trial.Options{
		Name:          name,
		Dir:           dir,
		Image:         images.GpuvcRef,
		NodeImage:     os.Getenv(kindNodeImageEnv),
		ImageArchives: tars,
		Values:        map[string]any{"vcluster": map[string]any{"chart": map[string]any{"dir": vclusterChartInImage}}},
		Log:           logWriter,
	}}
	defer func() {
		if err != nil {
			err = errors.Join(err, b.Stop())
		}
	}()
	if b.cluster, err = trial.Start(ctx, b.opts); err != nil {
		return nil, err
	}
	fmt.Fprintf(logWriter, "e2e: kind backend ready in %v (cluster %s, kubeconfig %s)\n",
		time.Since(began).Round(time.Second), name, b.cluster.Kubeconfig)
	return b, nil
}

// kindImages builds (once, cached by content) the gpuvc image with vCluster's
// chart inside and the workload image, and returns their archives.
func kindImages(ctx context.Context, gpuvcBin string) ([]string, error) {
	chart, err := vclusterstest.ChartDir(ctx)
	if err != nil {
		return nil, err
	}
	gpuvc := images.Gpuvc(images.GpuvcRef, gpuvcBin)
	chartFiles, err := images.FilesUnder(chart, vclusterChartInImage)
	if err != nil {
		return nil, err
	}
	gpuvc.Files = append(gpuvc.Files, chartFiles...)
	var tars []string
	for _, s := range []images.Spec{gpuvc, images.Workload("")} {
		tar, err := images.Build(s, images.DefaultDir())
		if err != nil {
			return nil, fmt.Errorf("building image %s: %w", s.Ref, err)
		}
		tars = append(tars, tar)
	}
	return tars, nil
}

func (b *kindBackend) Name() string {
	return "kind cluster " + b.opts.Name + " (system-0, a100-0, h100-0 with simulated GPUs)"
}
func (b *kindBackend) Kubeconfig() string           { return b.cluster.Kubeconfig }
func (b *kindBackend) Config() *rest.Config         { return b.cluster.Config }
func (b *kindBackend) Client() kubernetes.Interface { return b.cluster.Client }
func (b *kindBackend) RunsContainers() bool         { return true }

// ExportKubeconfig waits for the team's vCluster to export its kubeconfig (the
// first team on a fresh cluster waits for vCluster's images to be pulled).
func (b *kindBackend) ExportKubeconfig(ctx context.Context, team string) error {
	return waitForVClusterKubeconfig(ctx, b.cluster.Client, team, 5*time.Minute)
}

// Stop deletes the cluster the backend created; a cluster named by
// GPUVC_KIND_CLUSTER is kept (only the backend's kubeconfig folder goes).
func (b *kindBackend) Stop() error {
	if b.owned {
		return trial.Down(context.Background(), b.opts)
	}
	return os.RemoveAll(b.opts.Dir)
}
