package trial

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/kind/pkg/cluster"
	"sigs.k8s.io/kind/pkg/cluster/nodes"
	"sigs.k8s.io/kind/pkg/cluster/nodeutils"

	"github.com/gpuvc/gpuvc/charts/installer"
	"github.com/gpuvc/gpuvc/kind/localcluster"
	"github.com/gpuvc/gpuvc/kind/localcluster/images"
	"github.com/gpuvc/gpuvc/kind/nodepool"
)

// DefaultName is the kind cluster `make trial` creates.
const DefaultName = "gpuvc-trial"

// Namespace is where the trial installs gpuvc (as `gpuvc install` does by default).
const Namespace = installer.DefaultNamespace

// Options configure Start, Up and Down.
type Options struct {
	// Name of the kind cluster; default DefaultName. Start reuses a cluster of
	// that name when one exists.
	Name string
	// Dir receives the host cluster's kubeconfig (<Name>.kubeconfig), the team
	// kubeconfigs and, while loading it, the saved image. Required.
	Dir string
	// Image is the gpuvc image the chart runs, repository:tag: loaded into every
	// node (never pulled).
	Image string
	// ImageArchives are docker-archive tarballs loaded into every node instead of
	// saving Image from the local Docker engine (the e2e suite builds its images
	// without Docker); one of them must hold Image.
	ImageArchives []string
	// Pools are the simulated node pools; default Pools().
	Pools []nodepool.Pool
	// Values are chart values merged over the trial's own (see Values).
	Values map[string]any
	// NodeImage is the kind node image; default kind's own.
	NodeImage string
	// WorkloadImage runs Up's demo pods; default DefaultWorkloadImage.
	WorkloadImage string
	// Log receives progress lines; default io.Discard.
	Log io.Writer
	// Docker says whether a Docker engine answers; default DockerEngine.
	Docker DockerCheck
	// Timeout bounds each wait (nodes, install, each team, each pod); default 10m.
	Timeout time.Duration
}

func (o *Options) defaults() error {
	if o.Name == "" {
		o.Name = DefaultName
	}
	if o.Dir == "" {
		return errors.New("trial: Options.Dir (where the kubeconfigs go) is required")
	}
	if o.Pools == nil {
		o.Pools = Pools()
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	if o.Timeout <= 0 {
		o.Timeout = 10 * time.Minute
	}
	if _, err := ParseImage(o.Image); err != nil {
		return err
	}
	return checkPools(o.Pools)
}

// KubeconfigPath is where Start writes the host cluster's kubeconfig.
func (o Options) KubeconfigPath() string {
	name := o.Name
	if name == "" {
		name = DefaultName
	}
	return filepath.Join(o.Dir, name+".kubeconfig")
}

// Cluster is a kind cluster with gpuvc installed.
type Cluster struct {
	Name string
	// Kubeconfig is the path of a cluster-admin kubeconfig of the host cluster.
	Kubeconfig string
	Config     *rest.Config
	Client     kubernetes.Interface
	// SystemNodeIP is the address of the system node, where team vClusters answer
	// on their node ports.
	SystemNodeIP string
	// Created is false when Start reused an existing cluster.
	Created bool
	// GPUs are the pool nodes and the GPU resources their kubelets advertise.
	GPUs []NodeGPUs
	// Local is true for the Docker-less trial (UpLocal); Description then says
	// what runs, for the report.
	Local       bool
	Description string
	// Kubectl is the kubectl built with the binaries, for the report ("" with kind,
	// where the user has their own).
	Kubectl string
	// PrometheusURL is the Prometheus the Docker-less trial runs beside the
	// cluster, scraping gpuvc with its alert rules loaded ("" with kind).
	PrometheusURL string
}

// Start brings up the trial's kind cluster (or reuses the one named
// Options.Name), loads the gpuvc image into its nodes and installs gpuvc with
// the trial's values, waiting until the manager, its webhook and the agents are
// ready and every node's kubelet advertises its simulated GPUs. Without a Docker
// engine it fails at once with ErrNoDocker.
func Start(ctx context.Context, opts Options) (*Cluster, error) {
	if err := opts.defaults(); err != nil {
		return nil, err
	}
	return start(ctx, opts, newProgress(opts.Log))
}

// start is Start after defaults, printing to log.
func start(ctx context.Context, opts Options, log *progress) (*Cluster, error) {
	if err := RequireDocker(ctx, opts.Docker); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(opts.Dir, 0o700); err != nil {
		return nil, err
	}
	// Creating the cluster takes minutes: keep the archives from being replaced
	// in the image cache by another run's build until they are loaded.
	release, err := images.HoldAll(opts.ImageArchives)
	if err != nil {
		return nil, err
	}
	defer release()
	s := &session{opts: opts, log: log}
	s.provider = cluster.NewProvider(cluster.ProviderWithDocker(), cluster.ProviderWithLogger(kindLogger{log}))
	for _, step := range []func(context.Context) error{s.ensureCluster, s.connect, s.waitNodes, s.loadImages, s.install, s.waitGPUs} {
		if err := step(ctx); err != nil {
			return s.cluster, err
		}
	}
	return s.cluster, nil
}

// Down deletes the trial's kind cluster and its kubeconfig, like `rm -f`: a
// cluster that does not exist, or no Docker engine at all (so no cluster), is not
// an error.
func Down(ctx context.Context, opts Options) error {
	if opts.Name == "" {
		opts.Name = DefaultName
	}
	log := newProgress(opts.Log)
	if err := RequireDocker(ctx, opts.Docker); err != nil {
		log.printf("no Docker engine answers, so no kind cluster %s can be running here: nothing to delete", opts.Name)
		return removeFiles(opts)
	}
	p := cluster.NewProvider(cluster.ProviderWithDocker(), cluster.ProviderWithLogger(kindLogger{log}))
	names, err := p.List()
	if err != nil {
		return fmt.Errorf("listing kind clusters: %w", err)
	}
	if !slices.Contains(names, opts.Name) {
		log.printf("kind cluster %s does not exist: nothing to delete", opts.Name)
	} else {
		log.printf("deleting kind cluster %s", opts.Name)
		// Start wrote the cluster's kubeconfig only to the trial's folder, so kind
		// leaves the user's default kubeconfig alone (it does with no folder given).
		kubeconfig := ""
		if opts.Dir != "" {
			kubeconfig = opts.KubeconfigPath()
		}
		if err := p.Delete(opts.Name, kubeconfig); err != nil {
			return fmt.Errorf("deleting kind cluster %s: %w", opts.Name, err)
		}
		log.printf("kind cluster %s deleted", opts.Name)
	}
	if err := removeKindNetwork(ctx, p, log); err != nil {
		return err
	}
	return removeFiles(opts)
}

// removeFiles removes what Start and Up wrote into the trial's folder, and the
// folder once empty; nothing else there is touched.
func removeFiles(opts Options) error {
	if opts.Dir == "" {
		return nil
	}
	files := []string{opts.KubeconfigPath()}
	for _, d := range append(DemoTeams(""), LocalDemoTeams("")...) {
		files = append(files, teamKubeconfigPath(opts.Dir, d.Team.Name))
	}
	for _, f := range files {
		if err := os.Remove(f); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	if err := os.Remove(opts.Dir); err != nil && !errors.Is(err, fs.ErrNotExist) {
		if entries, _ := os.ReadDir(opts.Dir); len(entries) == 0 {
			return err
		}
	}
	return nil
}

// session is one Start or Up.
type session struct {
	opts     Options
	log      *progress
	provider *cluster.Provider
	cluster  *Cluster
}

// ensureCluster creates the kind cluster, or reuses an existing one of that name,
// and writes its kubeconfig to the trial's folder (never to ~/.kube/config).
func (s *session) ensureCluster(context.Context) error {
	name := s.opts.Name
	names, err := s.provider.List()
	if err != nil {
		return fmt.Errorf("listing kind clusters: %w", err)
	}
	s.cluster = &Cluster{Name: name, Kubeconfig: s.opts.KubeconfigPath()}
	if slices.Contains(names, name) {
		s.log.printf("kind cluster %s exists: reusing it (delete it with `make trial-down` for a fresh one)", name)
	} else {
		cfg, err := ClusterConfig(s.opts.Pools)
		if err != nil {
			return err
		}
		s.log.printf("creating kind cluster %s: a control plane and %d simulated GPU workers (pulls kind's node image on first use)", name, len(cfg.Nodes)-1)
		create := []cluster.CreateOption{
			cluster.CreateWithV1Alpha4Config(cfg),
			cluster.CreateWithKubeconfigPath(s.cluster.Kubeconfig),
			cluster.CreateWithWaitForReady(s.opts.Timeout),
			cluster.CreateWithDisplayUsage(false),
			cluster.CreateWithDisplaySalutation(false),
		}
		if s.opts.NodeImage != "" {
			create = append(create, cluster.CreateWithNodeImage(s.opts.NodeImage))
		}
		if err := s.provider.Create(name, create...); err != nil {
			return fmt.Errorf("creating kind cluster %s: %w (remove what is left with `make trial-down`)", name, err)
		}
		s.cluster.Created = true
	}
	kubeconfig, err := s.provider.KubeConfig(name, false)
	if err != nil {
		return fmt.Errorf("kubeconfig of kind cluster %s: %w", name, err)
	}
	return os.WriteFile(s.cluster.Kubeconfig, []byte(kubeconfig), 0o600)
}

func (s *session) connect(context.Context) error {
	cfg, err := clientcmd.BuildConfigFromFlags("", s.cluster.Kubeconfig)
	if err != nil {
		return err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	s.cluster.Config, s.cluster.Client = cfg, cs
	return nil
}

// waitNodes waits until every pool node is registered and Ready, then records
// the system node's address.
func (s *session) waitNodes(ctx context.Context) error {
	var want []string
	for _, p := range s.opts.Pools {
		for _, n := range p.Nodes {
			want = append(want, n.Name)
		}
	}
	if !s.cluster.Created {
		// A reused cluster registered its nodes long ago: one without the pools'
		// nodes is not a trial cluster (or one of another layout).
		for _, name := range want {
			if _, err := s.cluster.Client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{}); apierrors.IsNotFound(err) {
				return fmt.Errorf("kind cluster %s has no node %s: it is not a gpuvc trial cluster of this version; delete it with `make trial-down` (or `gpuvc dev trial down --name %s`), or choose another --name",
					s.cluster.Name, name, s.cluster.Name)
			}
		}
	}
	last := ""
	err := wait.PollUntilContextTimeout(ctx, time.Second, s.opts.Timeout, true, func(ctx context.Context) (bool, error) {
		var missing []string
		for _, name := range want {
			n, err := s.cluster.Client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
			if err != nil || !localcluster.NodeReady(n) {
				missing = append(missing, name)
			}
		}
		if msg := fmt.Sprintf("waiting for nodes %v to be Ready", missing); len(missing) > 0 && msg != last {
			s.log.printf("%s", msg)
			last = msg
		}
		return len(missing) == 0, nil
	})
	if err != nil {
		return fmt.Errorf("kind cluster %s: nodes not Ready: %s (%w); is it a gpuvc trial cluster? `make trial-down` removes it", s.cluster.Name, last, err)
	}
	system := s.opts.Pools[slices.IndexFunc(s.opts.Pools, func(p nodepool.Pool) bool { return p.Name == SystemPool })].Nodes[0].Name
	n, err := s.cluster.Client.CoreV1().Nodes().Get(ctx, system, metav1.GetOptions{})
	if err != nil {
		return err
	}
	for _, a := range n.Status.Addresses {
		if a.Type == corev1.NodeInternalIP {
			s.cluster.SystemNodeIP = a.Address
			s.log.printf("nodes Ready; system node %s at %s", system, a.Address)
			return nil
		}
	}
	return fmt.Errorf("node %s has no InternalIP address", system)
}

// loadImages loads the gpuvc image (and any other archives) into every node's
// containerd, as `kind load` does.
func (s *session) loadImages(ctx context.Context) error {
	archives := s.opts.ImageArchives
	if len(archives) == 0 {
		s.log.printf("saving image %s from the local Docker engine", s.opts.Image)
		tar, err := dockerSave(ctx, s.opts.Image, s.opts.Dir)
		if err != nil {
			return err
		}
		defer os.Remove(tar)
		archives = []string{tar}
	}
	nodes, err := s.provider.ListNodes(s.opts.Name)
	if err != nil {
		return err
	}
	for _, n := range nodes {
		for _, a := range archives {
			s.log.printf("loading %s into node container %s", filepath.Base(a), n.String())
			if err := loadArchive(n, a); err != nil {
				return fmt.Errorf("loading %s into %s: %w", a, n, err)
			}
		}
	}
	return nil
}

func loadArchive(n nodes.Node, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return nodeutils.LoadImageArchive(n, f)
}

// install installs or upgrades gpuvc with the trial's values, as `gpuvc install
// -f values.yaml --wait` does (same library).
func (s *session) install(ctx context.Context) error {
	return installGpuvc(ctx, s.cluster, s.opts, s.log, true)
}

// waitGPUs waits for the simulated device plugins to have registered.
func (s *session) waitGPUs(ctx context.Context) (err error) {
	s.cluster.GPUs, err = waitGPUs(ctx, s.cluster.Client, s.opts.Pools, s.opts.Timeout, s.log)
	return err
}

func installGpuvc(ctx context.Context, c *Cluster, opts Options, log *progress, waitReady bool) error {
	img, err := ParseImage(opts.Image)
	if err != nil {
		return err
	}
	vals, err := Values(img, c.SystemNodeIP, opts.Pools)
	if err != nil {
		return err
	}
	return installValues(ctx, c.Kubeconfig, img, installer.Overlay(vals, opts.Values), opts, log, waitReady)
}

// installValues installs or upgrades gpuvc's chart with vals, as `gpuvc install
// -f values.yaml --wait` does (same library).
func installValues(ctx context.Context, kubeconfig string, img Image, vals map[string]any, opts Options, log *progress, waitReady bool) error {
	in, err := installer.NewForKubeconfig(kubeconfig, "", Namespace)
	if err != nil {
		return err
	}
	log.printf("installing gpuvc (image %s) in namespace %s", img, Namespace)
	ctx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()
	res, err := in.Install(ctx, installer.InstallOptions{
		Values: vals, CreateNamespace: true, Wait: waitReady, Timeout: opts.Timeout,
		Progress: func(_ time.Duration, st installer.WorkloadStatus) {
			mark := "…"
			if st.Ready {
				mark = "✓"
			}
			log.printf("%s %s: %s", mark, st.Workload, st.Status)
		},
	})
	if err != nil {
		return fmt.Errorf("installing gpuvc: %w", err)
	}
	log.printf("gpuvc %s: release %s revision %d", res.Action, res.Release, res.Revision)
	return nil
}
