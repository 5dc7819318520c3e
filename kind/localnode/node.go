package localnode

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gpuvc/gpuvc/gpu/inventory"
	"github.com/gpuvc/gpuvc/kind/bringup"
	"github.com/gpuvc/gpuvc/kind/localcluster"
	"github.com/gpuvc/gpuvc/kind/supervise"
)

// Options configure a node.
type Options struct {
	// Name is the node's name; empty means "localnode".
	Name string
	// Labels are set on the Node object (by the admin client, so any key works)
	// before Start returns; Taints are registered by the kubelet, so no pod lands
	// before they are in place.
	Labels map[string]string
	Taints []corev1.Taint
	// Images are docker-archive tarballs imported into containerd before the node
	// registers. PauseImage, the sandbox image, must be one of them (by name).
	Images     []string
	PauseImage string
	// GPUs, if set, are simulated GPUs served to this kubelet through the
	// device-plugin API with the mixed MIG strategy: whole GPUs as nvidia.com/gpu,
	// MIG devices as nvidia.com/mig-<profile>. The node also gets GPU Feature
	// Discovery's labels. The seed defaults to the node name.
	GPUs *inventory.Spec
	// NetworkPolicy also runs kube-router's NetworkPolicy controller.
	NetworkPolicy bool
	// ClusterDNS are the nameservers pods get (none by default: pods have no DNS).
	ClusterDNS []string
	// Dir holds configuration, state, logs and the kubelet's and containerd's
	// folders. Empty: a new temporary folder, removed by Stop.
	Dir string
	// Host is the machine slot to run on. Nil: Start acquires one and Stop
	// releases it.
	Host *Host
	// Detached lets the node's daemons outlive this program (`gpuvc dev cluster
	// up`, the Docker-less trial): they get their own session and no parent-death
	// signal. Leave then lets the program exit with the node running; Teardown,
	// from any later program, removes it.
	Detached bool
	// GPUAgent, if set, is a gpuvc binary whose `gpuvc agent --simulate ...
	// --device-plugin` serves GPUs as a daemon of the node instead of this program
	// (needed when Detached). It also publishes the inventory on the Node.
	GPUAgent string
	// Log receives progress lines. Nil discards them.
	Log io.Writer
}

// Node is a running worker node.
type Node struct {
	Name string
	Dir  string
	IP   net.IP
	// Inventory is the simulated GPU inventory served to the kubelet, if any.
	Inventory inventory.Inventory
	// ReadyAfter is how long the kubelet took from start to Node Ready.
	ReadyAfter time.Duration

	cp      *localcluster.ControlPlane
	bins    *localcluster.NodeBinaries
	opts    Options
	log     io.Writer
	host    *Host
	ownHost bool
	st      *nodeState
	// recorded: the host records the node (Stop undoes a failed Start).
	recorded       bool
	kubeletStarted time.Time

	procs         []*supervise.Process
	proxyHealthz  int
	routerHealthz int
	stopGPUs      func()
	gpuDone       chan error

	stopOnce sync.Once
	stopErr  error
}

// Component names a process of the node.
type Component string

const (
	Containerd Component = "containerd"
	Kubelet    Component = "kubelet"
	KubeProxy  Component = "kube-proxy"
	KubeRouter Component = "kube-router"
	GPUAgent   Component = "gpu-agent"
)

// fixedPaths are host paths outside the node's folder that the kubelet,
// containerd, the CNI plugins or mount(8) use whatever their configuration: the
// kubelet's device-plugin folder and container log links, the CNI result cache,
// libmount's utab folder, and defaults this package's configuration moves away
// (checked anyway). Those that do not exist yet are removed by Stop.
var fixedPaths = []string{
	"/var/lib/kubelet/device-plugins",
	"/var/log/containers",
	"/var/lib/cni",
	"/run/mount",
	"/var/log/pods",
	"/run/containerd",
	"/run/netns",
	"/usr/libexec/kubernetes",
}

// Start starts a worker node joined to cp and waits until it is Ready, with its
// images imported, its GPUs allocatable and kube-proxy (and kube-router) healthy.
// cp should have been started with NodeIP for pods to reach the API server. It
// runs the steps of start.go in order, each named in the progress on
// Options.Log and, when it fails, in the error. On error nothing it started is
// left running.
func Start(ctx context.Context, cp *localcluster.ControlPlane, bins *localcluster.NodeBinaries, opts Options) (*Node, error) {
	began := time.Now()
	if opts.Name == "" {
		opts.Name = "localnode"
	}
	n := &Node{Name: opts.Name, IP: NodeIP, cp: cp, bins: bins, opts: opts, log: opts.Log, host: opts.Host}
	if n.log == nil {
		n.log = io.Discard
	}
	if err := bringup.Run(ctx, "localnode", n.log, n.steps()); err != nil {
		return nil, errors.Join(err, n.abort())
	}
	n.logf("node %s ready in %v", n.Name, time.Since(began).Round(time.Millisecond))
	return n, nil
}

// checkPrerequisites names the Debian package of each missing host tool.
func checkPrerequisites(bins *localcluster.NodeBinaries, opts Options) error {
	if os.Geteuid() != 0 {
		return errors.New("localnode: a real node needs root (containerd, runc, cgroups, iptables, bridge)")
	}
	need := map[string]string{
		runcPath:                               "runc",
		"iptables":                             "iptables",
		"iptables-save":                        "iptables",
		"iptables-restore":                     "iptables",
		filepath.Join(cniBinDir, "bridge"):     "containernetworking-plugins",
		filepath.Join(cniBinDir, "host-local"): "containernetworking-plugins",
		filepath.Join(cniBinDir, "portmap"):    "containernetworking-plugins",
		filepath.Join(cniBinDir, "loopback"):   "containernetworking-plugins",
	}
	if opts.NetworkPolicy {
		need["ipset"] = "ipset"
	}
	var missing []error
	for bin, pkg := range need {
		if _, err := exec.LookPath(bin); err != nil {
			missing = append(missing, fmt.Errorf("%s not found: install the Debian package %s", bin, pkg))
		}
	}
	if bins == nil || bins.Kubelet == "" || bins.KubeProxy == "" || bins.Containerd == "" || bins.ContainerdShim == "" || bins.Ctr == "" ||
		(opts.NetworkPolicy && bins.KubeRouter == "") {
		missing = append(missing, errors.New("localnode: node binaries missing: "+localcluster.BuildHint+""))
	}
	if opts.PauseImage == "" {
		missing = append(missing, errors.New("localnode: Options.PauseImage (the sandbox image, imported from Options.Images) is required"))
	}
	return errors.Join(missing...)
}

// topMissing returns the highest missing folder on the way to path ("" if path
// exists): what removing would undo creating path.
func topMissing(path string) string {
	if _, err := os.Lstat(path); err == nil {
		return ""
	}
	top := path
	for dir := filepath.Dir(path); dir != "/" && dir != "."; dir = filepath.Dir(dir) {
		if _, err := os.Lstat(dir); err == nil {
			break
		}
		top = dir
	}
	return top
}

func (n *Node) path(elem ...string) string {
	return filepath.Join(append([]string{n.Dir}, elem...)...)
}

func (n *Node) logf(format string, args ...any) {
	fmt.Fprintf(n.log, "localnode: "+format+"\n", args...)
}

func (n *Node) start(c Component, bin string, args, env []string) error {
	p, err := supervise.Start(string(c), bin, args, env, n.path("logs"), n.opts.Detached)
	if err != nil {
		return err
	}
	n.procs = append(n.procs, p)
	return n.host.recordPID(n, string(c), p.PID())
}

// LogPath returns the log file of a component.
func (n *Node) LogPath(c Component) string { return n.path("logs", string(c)+".log") }

// PIDs returns the process id of each component started, by name.
func (n *Node) PIDs() map[Component]int {
	pids := map[Component]int{}
	for _, p := range n.procs {
		pids[Component(p.Name)] = p.PID()
	}
	return pids
}

// RSS returns the resident memory of each running component, in bytes.
func (n *Node) RSS() map[Component]int64 {
	rss := map[Component]int64{}
	for _, p := range n.procs {
		if p.Exited() == nil {
			rss[Component(p.Name)] = rssBytes(p.PID())
		}
	}
	return rss
}

// poll runs cond until it reports done, failing fast if a component has exited.
func (n *Node) poll(ctx context.Context, what string, cond func(ctx context.Context) (bool, error)) error {
	return supervise.Poll(ctx, what, n.procs, cond)
}

func (n *Node) waitHTTP(ctx context.Context, c Component, url string) error {
	return supervise.WaitHTTP(ctx, string(c), n.procs, url)
}

// waitNode waits until the kubelet has registered the Node, labels it, and waits
// until it is Ready.
func (n *Node) waitNode(ctx context.Context) error {
	nodes := n.cp.Client.CoreV1().Nodes()
	if err := n.poll(ctx, "node "+n.Name+" registered", func(ctx context.Context) (bool, error) {
		_, err := nodes.Get(ctx, n.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, err
		}
		return err == nil, err
	}); err != nil {
		return err
	}
	if err := n.patchLabels(ctx, n.opts.Labels); err != nil {
		return err
	}
	return n.poll(ctx, "node "+n.Name+" Ready", func(ctx context.Context) (bool, error) {
		node, err := nodes.Get(ctx, n.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return localcluster.NodeReady(node), nil
	})
}

func (n *Node) patchLabels(ctx context.Context, labels map[string]string) error {
	if len(labels) == 0 {
		return nil
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": labels}})
	if err != nil {
		return err
	}
	if _, err := n.cp.Client.CoreV1().Nodes().Patch(ctx, n.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("labelling node %s: %w", n.Name, err)
	}
	return nil
}

// checkAdvertisedIP warns when the control plane does not advertise the node IP
// (localcluster.Options.NodeIP): pods then cannot reach the API server, and without
// the API server's kubelet client certificate logs and exec fail.
func (n *Node) checkAdvertisedIP(ctx context.Context) {
	list, err := n.cp.Client.DiscoveryV1().EndpointSlices("default").List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=kubernetes"})
	if err != nil {
		return
	}
	for _, s := range list.Items {
		for _, ep := range s.Endpoints {
			for _, a := range ep.Addresses {
				if a == NodeIP.String() {
					return
				}
			}
		}
	}
	n.logf("warning: the control plane does not advertise %s (start it with localcluster.Options{NodeIP: localnode.NodeIP}): pods cannot reach the API server, logs and exec fail", NodeIP)
}
