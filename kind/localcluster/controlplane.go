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
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/gpuvc/gpuvc/kind/bringup"
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
// default ServiceAccount exists and every simulated node is Ready. It runs the
// steps of start.go in order, each named in the progress on Options.Log and, when
// it fails, in the error. On error nothing it started is left running.
func Start(ctx context.Context, opts Options) (*ControlPlane, error) {
	log := opts.Log
	if log == nil {
		log = io.Discard
	}
	began := time.Now()
	s := &starter{cp: &ControlPlane{Dir: opts.Dir, detached: opts.Detached}, opts: opts}
	if err := bringup.Run(ctx, "localcluster", log, s.steps()); err != nil {
		_ = s.cp.Stop()
		return nil, err
	}
	if opts.APIOnly {
		fmt.Fprintf(log, "localcluster: API server ready at %s\n", s.cp.Server)
		return s.cp, nil
	}
	fmt.Fprintf(log, "localcluster: ready at %s in %v (kubeconfig %s)\n", s.cp.Server, time.Since(began).Round(10*time.Millisecond), s.cp.Kubeconfig)
	return s.cp, nil
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
