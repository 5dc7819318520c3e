package trial

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuvc/gpuvc/api/contract"
	"github.com/gpuvc/gpuvc/charts"
	"github.com/gpuvc/gpuvc/charts/installer"
	"github.com/gpuvc/gpuvc/gpu/inventory"
	"github.com/gpuvc/gpuvc/kind/localcluster"
	"github.com/gpuvc/gpuvc/kind/localcluster/images"
	"github.com/gpuvc/gpuvc/kind/localstack"
	"github.com/gpuvc/gpuvc/kind/nodepool"
)

// ErrCannotRun is returned (wrapped, saying what is missing) when neither the
// kind trial (a Docker engine) nor the Docker-less trial (root) can run here.
var ErrCannotRun = errors.New("the trial cannot run here")

// localDir is the folder under Options.Dir holding the Docker-less trial's
// cluster and node.
const localDir = "local"

// LocalGPUs are the simulated GPUs of the Docker-less trial's real node: nine
// A100-80GB. The device plugin serves six, four whole and two in MIG mode with
// the balanced layout (2 × 1g.10gb, 2g.20gb, 3g.40gb each). Both demo teams run
// there, in the system pool: a whole-GPU pod and a GPU reserved for fractions
// each (four whole GPUs), and vision's 1g.10gb MIG pod. The DRA driver serves
// the last three (DRA: 3), as on localstack.DefaultGPUs: two whole, one in MIG
// mode with the balanced layout, for claims (docs/dra.md).
//
// Why the system pool: the local cluster has one real node, the only node whose
// pods really run (kwok nodes only mark them Running, with no container and no
// NVIDIA_VISIBLE_DEVICES to read). gpuvc pins the manager and every vCluster
// control plane to the system pool, so the real node must be that pool; the
// teams then use it too, rather than a100/h100 pools that would have to be kwok
// nodes.
var LocalGPUs = inventory.Spec{
	Product: nodepool.ProductA100_80GB, Count: 9, DRA: 3,
	MIG: []string{"all-disabled", "all-disabled", "all-disabled", "all-disabled", "all-balanced", "all-balanced",
		"all-disabled", "all-disabled", "all-balanced"},
}

// LocalUnavailable says why the Docker-less trial cannot run here, or "".
func LocalUnavailable() string { return localstack.RealNodeUnavailable() }

// NeitherCanRun is the error when no Docker engine answers (dockerErr) and the
// Docker-less trial cannot run either (why): it says exactly what each needs.
func NeitherCanRun(dockerErr error, why string) error {
	return fmt.Errorf(`%w: no Docker engine answers (%v) and %s.
The trial needs one of:
  - root, for the Docker-less trial (the default without Docker): a local control plane and a real node
    (kubelet, containerd, runc, kube-proxy, kube-router) on this machine; the Debian packages runc, iptables,
    ipset and containernetworking-plugins; and the prebuilt binaries (make binaries). Run: sudo make trial
  - a Docker engine that answers (docker version shows a Server), for the kind trial
See docs/trial.md`, ErrCannotRun, dockerErr, why)
}

// UpLocal is Up without Docker: the local cluster with a real node (package
// localstack, left running), gpuvc installed from its chart with the images built
// here, the demo teams in the real node's pool (LocalDemoTeams), their pods
// through each team's own kubeconfig. It reuses a trial cluster already running
// in Options.Dir. It needs root and the prebuilt binaries (`make binaries`).
func UpLocal(ctx context.Context, opts Options) (*Result, error) {
	opts.Image = images.GpuvcRef
	// Nothing is pulled here: the demo pods run the busybox image built locally
	// and imported into the node, unless the caller chose another imported one.
	if opts.WorkloadImage == "" || opts.WorkloadImage == DefaultWorkloadImage {
		opts.WorkloadImage = images.WorkloadRef
	}
	if err := opts.defaults(); err != nil {
		return nil, err
	}
	log := newProgress(opts.Log)
	c, err := startLocal(ctx, opts, log)
	if err != nil {
		return nil, err
	}
	return runDemo(ctx, c, LocalDemoTeams(opts.WorkloadImage), opts, log)
}

func startLocal(ctx context.Context, opts Options, log *progress) (*Cluster, error) {
	if why := LocalUnavailable(); why != "" {
		return nil, fmt.Errorf("%w: the Docker-less trial cannot run: %s", ErrCannotRun, why)
	}
	if _, err := localcluster.LoadManifest(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(opts.Dir, 0o700); err != nil {
		return nil, err
	}
	dir := filepath.Join(opts.Dir, localDir)
	c := &Cluster{
		Name: opts.Name, Kubeconfig: opts.KubeconfigPath(), Local: true,
		Description: "the local cluster (no Docker: control-plane processes and a real node, " + localstack.RealNodeName + ", on this machine)",
	}
	if m, err := localcluster.LoadManifest(); err == nil {
		if b, err := m.ControlPlane(); err == nil {
			c.Kubectl = b.Kubectl
		}
	}
	if localstack.Running(dir) && localstack.HasRealNode(dir) {
		log.printf("the local trial cluster in %s is running: reusing it (`make trial-down` for a fresh one)", dir)
	} else {
		if err := localstack.Down(ctx, dir, opts.Log); err != nil {
			return nil, fmt.Errorf("removing what an earlier trial left in %s: %w", dir, err)
		}
		log.printf("starting the local cluster and its real node %s in %s", localstack.RealNodeName, dir)
		gpus := LocalGPUs
		if _, err := localstack.Up(ctx, localstack.Options{Dir: dir, Pools: []nodepool.Pool{}, GPUs: &gpus, Log: opts.Log}); err != nil {
			return nil, err
		}
		c.Created = true
	}
	st, err := localcluster.ReadState(localstack.ClusterDir(dir))
	if err != nil {
		return nil, err
	}
	kc, err := os.ReadFile(st.Kubeconfig)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(c.Kubeconfig, kc, 0o600); err != nil {
		return nil, err
	}
	s := &session{opts: opts, log: log, cluster: c}
	if err := s.connect(ctx); err != nil {
		return nil, err
	}
	img, err := ParseImage(opts.Image)
	if err != nil {
		return nil, err
	}
	if err := installValues(ctx, c.Kubeconfig, img, installer.Overlay(localstack.Values(), opts.Values), opts, log, true); err != nil {
		return nil, err
	}
	if c.GPUs, err = nodeGPUs(ctx, c); err != nil {
		return nil, err
	}
	if c.PrometheusURL, err = startPrometheus(ctx, c, dir, log); err != nil {
		return nil, err
	}
	return c, nil
}

// startPrometheus runs the stack's Prometheus (or finds it running) with gpuvc's
// alert rules, scraping the manager through its metrics Service's ClusterIP
// (which routes from this machine) and the real node's GPU agent.
func startPrometheus(ctx context.Context, c *Cluster, dir string, log *progress) (string, error) {
	svc, err := c.Client.CoreV1().Services(Namespace).Get(ctx, charts.MetricsServiceName, metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("the manager's metrics Service, for Prometheus: %w", err)
	}
	if len(svc.Spec.Ports) == 0 || svc.Spec.ClusterIP == "" {
		return "", fmt.Errorf("Service %s/%s has no ClusterIP and port for Prometheus to scrape", Namespace, charts.MetricsServiceName)
	}
	rules, err := charts.PrometheusRules()
	if err != nil {
		return "", err
	}
	target := net.JoinHostPort(svc.Spec.ClusterIP, strconv.Itoa(int(svc.Spec.Ports[0].Port)))
	url, err := localstack.StartPrometheus(ctx, dir, target, rules, log.w)
	if err != nil {
		return "", fmt.Errorf("starting Prometheus beside the trial (make trial-down removes it): %w", err)
	}
	log.printf("Prometheus at %s scrapes the manager (%s) and the node's GPU agent, with gpuvc's alert rules", url, target)
	return url, nil
}

// nodeGPUs lists every node with its pool and the GPU resources it advertises.
func nodeGPUs(ctx context.Context, c *Cluster) ([]NodeGPUs, error) {
	nodes, err := c.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	var out []NodeGPUs
	for _, n := range nodes.Items {
		alloc := map[string]string{}
		for k, v := range n.Status.Allocatable {
			alloc[string(k)] = v.String()
		}
		out = append(out, NodeGPUs{Pool: n.Labels[contract.LabelPool], Node: n.Name, GPUs: gpuList(alloc)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Node < out[j].Node })
	return out, nil
}

// DownLocal removes the Docker-less trial: the real node and everything it made
// on this machine, the control plane, and the kubeconfigs UpLocal wrote. Nothing
// there: nothing to do.
func DownLocal(ctx context.Context, opts Options) error {
	if opts.Name == "" {
		opts.Name = DefaultName
	}
	log := newProgress(opts.Log)
	dir := filepath.Join(opts.Dir, localDir)
	if _, err := os.Stat(dir); err != nil {
		log.printf("no local trial cluster in %s: nothing to delete", dir)
	} else {
		log.printf("removing the local trial cluster in %s", dir)
		if err := localstack.Down(ctx, dir, opts.Log); err != nil {
			return err
		}
		log.printf("local trial cluster removed")
	}
	return removeFiles(opts)
}
