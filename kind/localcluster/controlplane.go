package localcluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/gpuvc/gpuvc/kind/nodepool"
	"github.com/gpuvc/gpuvc/kind/supervise"
)

// Component names a process of the control plane.
type Component string

const (
	Etcd              Component = "etcd"
	APIServer         Component = "kube-apiserver"
	ControllerManager Component = "kube-controller-manager"
	Scheduler         Component = "kube-scheduler"
	Kwok              Component = "kwok"
)

// Options configure a control plane. The zero value starts every component with the
// default node pools in a fresh temporary folder.
type Options struct {
	// Dir holds PKI, kubeconfigs, etcd data and logs. Empty: a new temporary folder,
	// removed by Stop.
	Dir string
	// APIOnly starts only etcd and kube-apiserver: a second, independent API server
	// such as a team's virtual cluster uses.
	APIOnly bool
	// Pools are the simulated nodes kwok runs. Nil means nodepool.Default(); an empty
	// non-nil slice means no nodes. Ignored with APIOnly.
	Pools []nodepool.Pool
	// ExtraSANs are added to the API server's serving certificate.
	ExtraSANs []net.IP
	// NodeIP makes the API server reachable from pods on a real worker node (package
	// localnode) whose node address it is: kube-apiserver then listens on every
	// address, advertises NodeIP as the `kubernetes` Service's endpoint, carries it in
	// its serving certificate and authenticates to kubelets with a client certificate
	// (kubectl logs/exec). Nil keeps everything on loopback.
	NodeIP net.IP
	// APIPort is the API server's port. 0: a free port, or with NodeIP the API
	// server's usual 6443, held by a machine-wide lock (one such control plane at
	// a time). A test that needs a second NodeIP control plane next to one sets it.
	APIPort int
	// ExtraAPIServerArgs are appended to kube-apiserver's flags.
	ExtraAPIServerArgs []string
	// Detached lets the processes outlive this program (a developer's cluster).
	Detached bool
	// Binaries are the executables to run. Nil: the prebuilt ones the manifest
	// lists (Manifest.ControlPlane).
	Binaries *Binaries
	// Log receives progress lines. Nil discards them.
	Log io.Writer
}

// ControlPlane is a running local cluster.
type ControlPlane struct {
	Dir        string
	Kubeconfig string // admin (system:masters) kubeconfig
	Server     string // https://127.0.0.1:<port>
	Config     *rest.Config
	Client     kubernetes.Interface
	PKI        *PKI
	Binaries   *Binaries

	procs     []*supervise.Process
	removeDir bool
	kcmPort   int
	schedPort int
	stopped   bool
	detached  bool
	apiArgs   []string // kube-apiserver's flags, for RestartAPIServer
	// nodeIPLock is held while a NodeIP control plane runs (port 6443).
	nodeIPLock *os.File
}

// State is what a detached control plane leaves on disk so `dev cluster down` can
// stop it later.
type State struct {
	Kubeconfig string         `json:"kubeconfig"`
	Server     string         `json:"server"`
	PIDs       map[string]int `json:"pids"`
}

const stateFile = "state.json"

// Start starts a control plane from prebuilt binaries and waits until it is ready: the
// API server answers /readyz, the controller manager and scheduler are healthy, the
// default ServiceAccount exists and every simulated node is Ready. On error nothing
// it started is left running.
func Start(ctx context.Context, opts Options) (cp *ControlPlane, err error) {
	log := opts.Log
	if log == nil {
		log = io.Discard
	}
	began := time.Now()
	cp = &ControlPlane{Dir: opts.Dir, detached: opts.Detached}
	if cp.Dir == "" {
		if cp.Dir, err = os.MkdirTemp("", "gpuvc-localcp-"); err != nil {
			return nil, err
		}
		cp.removeDir = true
	}
	defer func() {
		if err != nil {
			_ = cp.Stop()
		}
	}()
	if cp.Binaries = opts.Binaries; cp.Binaries == nil {
		m, err := LoadManifest()
		if err != nil {
			return nil, err
		}
		if cp.Binaries, err = m.ControlPlane(); err != nil {
			return nil, err
		}
	}
	ports, err := FreePorts(6)
	if err != nil {
		return nil, err
	}
	etcdPort, peerPort, apiPort, kwokPort := ports[0], ports[1], ports[2], ports[5]
	cp.kcmPort, cp.schedPort = ports[3], ports[4]
	if opts.APIPort != 0 {
		apiPort = opts.APIPort
	} else if opts.NodeIP != nil {
		if cp.nodeIPLock, err = LockExclusive(ctx, nodeIPLock, "another control plane for a real node runs on this machine"); err != nil {
			return nil, err
		}
		// Pods reach the API server at its endpoint's port once kube-proxy has
		// translated the Service address, and NetworkPolicies (gpuvc's for vCluster
		// control planes among them) allow the API server's usual port, as on
		// kubeadm clusters.
		if apiPort, err = portFree(nodeAPIPort); err != nil {
			return nil, err
		}
	}
	cp.Server = "https://127.0.0.1:" + strconv.Itoa(apiPort)

	ips := append([]net.IP{net.ParseIP("127.0.0.1"), net.ParseIP(serviceIP)}, opts.ExtraSANs...)
	if opts.NodeIP != nil {
		ips = append(ips, opts.NodeIP)
	}
	if cp.PKI, err = newPKI(filepath.Join(cp.Dir, "pki"), ips, apiServerNames); err != nil {
		return nil, fmt.Errorf("generating PKI: %w", err)
	}
	if opts.NodeIP != nil {
		// As kubeadm's apiserver-kubelet-client: a group the default RBAC lets use
		// every kubelet API (the kubelets authorize through a webhook).
		if err := cp.PKI.WriteClientCert(kubeletClientCert, kubeletClientCert, "system:masters"); err != nil {
			return nil, err
		}
	}
	cp.Kubeconfig = filepath.Join(cp.Dir, "admin.kubeconfig")
	for user, path := range map[string]string{
		"admin":                   cp.Kubeconfig,
		"kube-controller-manager": cp.kubeconfigPath(ControllerManager),
		"kube-scheduler":          cp.kubeconfigPath(Scheduler),
		"kwok":                    cp.kubeconfigPath(Kwok),
	} {
		if err := writeKubeconfig(cp.PKI, cp.Server, user, path); err != nil {
			return nil, err
		}
	}
	if cp.Config, err = clientcmd.BuildConfigFromFlags("", cp.Kubeconfig); err != nil {
		return nil, err
	}
	cp.Config.QPS, cp.Config.Burst = 100, 200
	if cp.Client, err = kubernetes.NewForConfig(cp.Config); err != nil {
		return nil, err
	}
	logDir := filepath.Join(cp.Dir, "logs")
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		return nil, err
	}
	start := func(c Component, bin string, args []string) error {
		fmt.Fprintf(log, "localcluster: starting %s\n", c)
		p, err := supervise.Start(string(c), bin, args, nil, logDir, opts.Detached)
		if err != nil {
			return err
		}
		cp.procs = append(cp.procs, p)
		return cp.writeState()
	}

	if err := start(Etcd, cp.Binaries.Etcd, etcdArgs(cp.Dir, etcdPort, peerPort)); err != nil {
		return nil, err
	}
	if err := cp.waitHTTP(ctx, Etcd, fmt.Sprintf("http://127.0.0.1:%d/health", etcdPort)); err != nil {
		return nil, err
	}
	cp.apiArgs = append(apiServerArgs(cp.PKI, etcdPort, apiPort, opts.NodeIP), opts.ExtraAPIServerArgs...)
	if err := start(APIServer, cp.Binaries.APIServer, cp.apiArgs); err != nil {
		return nil, err
	}
	if err := cp.waitAPIServer(ctx); err != nil {
		return nil, err
	}
	if opts.APIOnly {
		fmt.Fprintf(log, "localcluster: API server ready at %s\n", cp.Server)
		return cp, nil
	}
	if err := start(ControllerManager, cp.Binaries.ControllerManager, controllerManagerArgs(cp, cp.kcmPort)); err != nil {
		return nil, err
	}
	if err := start(Scheduler, cp.Binaries.Scheduler, schedulerArgs(cp, cp.schedPort)); err != nil {
		return nil, err
	}
	stages, err := writeKwokStages(cp.Dir)
	if err != nil {
		return nil, err
	}
	if err := start(Kwok, cp.Binaries.Kwok, kwokArgs(cp, stages, kwokPort)); err != nil {
		return nil, err
	}
	for c, port := range map[Component]int{ControllerManager: cp.kcmPort, Scheduler: cp.schedPort} {
		if err := cp.waitHTTP(ctx, c, fmt.Sprintf("https://127.0.0.1:%d/healthz", port)); err != nil {
			return nil, err
		}
	}
	pools := opts.Pools
	if pools == nil {
		pools = nodepool.Default()
	}
	if err := cp.AddNodes(ctx, pools); err != nil {
		return nil, err
	}
	if err := cp.WaitForServiceAccount(ctx, "default", "default"); err != nil {
		return nil, err
	}
	fmt.Fprintf(log, "localcluster: ready at %s in %v (kubeconfig %s)\n", cp.Server, time.Since(began).Round(10*time.Millisecond), cp.Kubeconfig)
	return cp, nil
}

// ServiceCIDR is the range ClusterIPs are taken from; ServiceIP is the `kubernetes`
// Service's ClusterIP; PodCIDR is the controller manager's cluster CIDR, which a real
// worker node's pod network must lie in.
const (
	ServiceCIDR = serviceCIDR
	ServiceIP   = serviceIP
	PodCIDR     = podCIDR
)

func (cp *ControlPlane) kubeconfigPath(c Component) string {
	return filepath.Join(cp.Dir, string(c)+".kubeconfig")
}

// PIDs returns the process id of every component started, by component name.
func (cp *ControlPlane) PIDs() map[string]int {
	pids := map[string]int{}
	for _, p := range cp.procs {
		pids[p.Name] = p.PID()
	}
	return pids
}

// LogPath returns the log file of a component.
func (cp *ControlPlane) LogPath(c Component) string {
	return filepath.Join(cp.Dir, "logs", string(c)+".log")
}

func (cp *ControlPlane) writeState() error {
	b, err := json.MarshalIndent(State{Kubeconfig: cp.Kubeconfig, Server: cp.Server, PIDs: cp.PIDs()}, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(cp.Dir, stateFile), b, 0o644)
}

// Stop stops every component in reverse start order and, for a temporary folder,
// removes it. It is safe to call more than once.
func (cp *ControlPlane) Stop() error {
	if cp.stopped {
		return nil
	}
	cp.stopped = true
	var errs []error
	for i := len(cp.procs) - 1; i >= 0; i-- {
		errs = append(errs, cp.procs[i].Stop(10*time.Second))
	}
	if cp.nodeIPLock != nil {
		errs = append(errs, cp.nodeIPLock.Close())
	}
	if cp.removeDir {
		errs = append(errs, os.RemoveAll(cp.Dir))
	}
	return errors.Join(errs...)
}

// ReadState reads what a detached control plane left in dir.
func ReadState(dir string) (*State, error) {
	b, err := os.ReadFile(filepath.Join(dir, stateFile))
	if err != nil {
		return nil, err
	}
	var s State
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("reading %s: %w", filepath.Join(dir, stateFile), err)
	}
	return &s, nil
}

// StopDetached stops the processes of a detached control plane recorded in dir, in
// reverse start order (kwok first, etcd last).
func StopDetached(dir string) error {
	s, err := ReadState(dir)
	if err != nil {
		return err
	}
	var errs []error
	for _, c := range []Component{Kwok, Scheduler, ControllerManager, APIServer, Etcd} {
		if pid, ok := s.PIDs[string(c)]; ok {
			errs = append(errs, supervise.StopPID(pid, 10*time.Second))
		}
	}
	return errors.Join(errs...)
}
