package suite

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/kind/pkg/cluster"

	"github.com/gpuvc/gpuvc/e2e/kindnode"
	"github.com/gpuvc/gpuvc/e2e/testsupport/testobj"
	"github.com/gpuvc/gpuvc/kind/localcluster/images"
	"github.com/gpuvc/gpuvc/kind/trial"
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
	// archives is the folder of this run's image archives.
	archives string
}

// startKind brings up the trial cluster through kind's Go library, with every
// image the suite runs built in Go (no docker build, nothing pulled) and loaded
// into the nodes — the real node's set (images.ForRealNode): the gpuvc image of
// the binary under test carrying vCluster's chart, vCluster's syncer and
// Kubernetes distro images, CoreDNS, pause and the busybox workload — on nodes of
// the image GPUVC_KIND_NODE_IMAGE names (e.g. built offline by e2e/kindnode),
// else kind's own.
func startKind(ctx context.Context, gpuvcBin string) (_ Backend, err error) {
	name, reuse := os.LookupEnv(kindClusterEnv)
	if !reuse || name == "" {
		name, reuse = kindDefaultCluster, false
	}
	if err := trial.RequireDocker(ctx, nil); err != nil {
		return nil, err
	}
	began := time.Now()
	tars, err := realImages(ctx, gpuvcBin)
	if err != nil {
		return nil, err
	}
	placeholder, err := images.Build(placeholderImage(), images.DefaultDir())
	if err != nil {
		return nil, err
	}
	// The run's own copy of the archives (kindnode.PinArchives), removed by Stop.
	archives, err := os.MkdirTemp("", "gpuvc-e2e-kind-images-")
	if err != nil {
		return nil, err
	}
	if tars, err = kindnode.PinArchives(archives, append(tars, placeholder)); err != nil {
		os.RemoveAll(archives)
		return nil, err
	}
	dir, err := os.MkdirTemp("", "gpuvc-e2e-kind-")
	if err != nil {
		os.RemoveAll(archives)
		return nil, err
	}
	b := &kindBackend{owned: !reuse, archives: archives, opts: trial.Options{
		Name:          name,
		Dir:           dir,
		Image:         images.GpuvcRef,
		NodeImage:     os.Getenv(kindNodeImageEnv),
		ImageArchives: tars,
		Values:        trial.BuiltImageValues(),
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

// placeholderImage is the image testobj's pods name (registry.invalid, never
// pullable): on kind their GPU nodes are real kubelets, which must start them to
// report them Running (the local backend's GPU nodes are kwok's). It is the
// workload image, sleeping.
func placeholderImage() images.Spec {
	s := images.Workload("")
	s.Ref = testobj.PlaceholderImage
	s.Cmd = []string{"-c", "exec sleep 2147483647"}
	return s
}

func (b *kindBackend) Name() string {
	return "kind cluster " + b.opts.Name + " (system-0, a100-0, h100-0 with simulated GPUs)"
}
func (b *kindBackend) Kubeconfig() string           { return b.cluster.Kubeconfig }
func (b *kindBackend) Config() *rest.Config         { return b.cluster.Config }
func (b *kindBackend) Client() kubernetes.Interface { return b.cluster.Client }
func (b *kindBackend) RunsContainers() bool         { return true }

// SystemNodeCommand runs the command in system-0's container (docker exec): its
// kube-proxy's and kube-router's rules live in that node's network namespace, not
// this machine's. The container is the one of the cluster at system-0's address.
func (b *kindBackend) SystemNodeCommand(ctx context.Context, name string, args ...string) (*exec.Cmd, error) {
	nodes, err := cluster.NewProvider(cluster.ProviderWithDocker()).ListNodes(b.opts.Name)
	if err != nil {
		return nil, fmt.Errorf("listing the nodes of kind cluster %s: %w", b.opts.Name, err)
	}
	for _, n := range nodes {
		if ip, _, err := n.IP(); err == nil && ip == b.cluster.SystemNodeIP {
			return exec.CommandContext(ctx, "docker", append([]string{"exec", n.String(), name}, args...)...), nil
		}
	}
	return nil, fmt.Errorf("no node of kind cluster %s has system-0's address %s", b.opts.Name, b.cluster.SystemNodeIP)
}

// ExportKubeconfig waits for the team's vCluster to export its kubeconfig.
func (b *kindBackend) ExportKubeconfig(ctx context.Context, team string) error {
	return waitForVClusterKubeconfig(ctx, b.cluster.Client, team, 5*time.Minute)
}

// Stop deletes the cluster the backend created; a cluster named by
// GPUVC_KIND_CLUSTER is kept (only the backend's kubeconfig folder goes).
func (b *kindBackend) Stop() error {
	err := os.RemoveAll(b.archives)
	if b.owned {
		return errors.Join(err, trial.Down(context.Background(), b.opts))
	}
	return errors.Join(err, os.RemoveAll(b.opts.Dir))
}
