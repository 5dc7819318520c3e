// Package localstack runs, detached from the program that starts it, the local
// cluster (kind/localcluster: etcd, kube-apiserver, controller manager,
// scheduler, kwok GPU nodes) with one real node (kind/localnode: kubelet,
// containerd, runc, kube-proxy, kube-router, simulated GPUs served by a gpuvc
// agent daemon) and every image the node needs for gpuvc and vCluster imported.
// `gpuvc dev cluster up` and the Docker-less trial run it; Down removes it all.
// It needs the prebuilt binaries of the manifest (`make binaries`) and, for the
// real node, root.
package localstack

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/gpuvc/gpuvc/gpu/inventory"
	"github.com/gpuvc/gpuvc/kind/localaddons"
	"github.com/gpuvc/gpuvc/kind/localcluster"
	"github.com/gpuvc/gpuvc/kind/localcluster/images"
	"github.com/gpuvc/gpuvc/kind/localkueue"
	"github.com/gpuvc/gpuvc/kind/localnode"
	"github.com/gpuvc/gpuvc/kind/localprom"
	"github.com/gpuvc/gpuvc/kind/nodepool"
)

// The real node is the system pool: the gpuvc manager and every team's vCluster
// control plane run there (gpuvc pins them to the system pool).
const (
	RealNodeName = "system-0"
	RealPool     = "system"
)

// DefaultGPUs are the real node's simulated GPUs unless Options say otherwise:
// two whole A100-80GB and two in MIG mode with the balanced layout.
var DefaultGPUs = inventory.Spec{
	Product: nodepool.ProductA100_80GB, Count: 4,
	MIG: []string{"all-disabled", "all-disabled", "all-balanced", "all-balanced"},
}

// Options configure Up.
type Options struct {
	// Dir holds the control plane (cluster/) and the node (node/). Required.
	Dir string
	// KwokOnly runs no real node: every node is a kwok node, pods are only marked
	// Running, no vCluster serves.
	KwokOnly bool
	// Pools are the kwok nodes. Nil: nodepool.Default(), without its system pool
	// when a real node runs (the real node is the system pool).
	Pools []nodepool.Pool
	// GPUs are the real node's simulated GPUs; nil means DefaultGPUs.
	GPUs *inventory.Spec
	// Gpuvc is the gpuvc binary put into the gpuvc image and run as the node's
	// GPU agent; empty means this program.
	Gpuvc string
	// Kueue runs the builder's Kueue controller beside the control plane
	// (kueue.go), for Teams with spec.queueing.
	Kueue bool
	// Log receives progress lines; nil discards them.
	Log io.Writer
}

// Stack is what Up started; it keeps running after this program exits.
type Stack struct {
	ControlPlane *localcluster.ControlPlane
	// Node is the real node, nil with KwokOnly.
	Node *localnode.Node
	// Pools are the kwok pools.
	Pools []nodepool.Pool
	// Kueue is the local Kueue, nil without Options.Kueue.
	Kueue *localkueue.Kueue
}

// ClusterDir and NodeDir are the folders of the control plane and the node.
func ClusterDir(dir string) string { return filepath.Join(dir, "cluster") }
func NodeDir(dir string) string    { return filepath.Join(dir, "node") }

// RealNodeUnavailable says why this machine cannot run a real node, or "".
func RealNodeUnavailable() string {
	if os.Geteuid() != 0 {
		return "not root: a real node needs root (containerd, runc, cgroups, iptables, bridge)"
	}
	return ""
}

// Up starts the stack in opts.Dir (emptied first) and leaves it running. On error
// it removes what it started.
func Up(ctx context.Context, opts Options) (_ *Stack, err error) {
	if opts.Dir == "" {
		return nil, errors.New("localstack: Options.Dir is required")
	}
	// The node's teardown matches processes and mounts by this folder: absolute.
	if opts.Dir, err = filepath.Abs(opts.Dir); err != nil {
		return nil, err
	}
	log := opts.Log
	if log == nil {
		log = io.Discard
	}
	m, err := localcluster.LoadManifest()
	if err != nil {
		return nil, err
	}
	if _, err := m.ControlPlane(); err != nil {
		return nil, err
	}
	real := !opts.KwokOnly
	if real {
		if why := RealNodeUnavailable(); why != "" {
			return nil, fmt.Errorf("%s; run as root, or choose kwok nodes only", why)
		}
	}
	if err := os.RemoveAll(opts.Dir); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(ClusterDir(opts.Dir), 0o700); err != nil {
		return nil, err
	}
	s := &Stack{Pools: opts.Pools}
	if s.Pools == nil {
		s.Pools = nodepool.Default()
		if real {
			s.Pools = withoutPool(s.Pools, RealPool)
		}
	}
	began := time.Now()
	if !real {
		s.ControlPlane, err = localcluster.Start(ctx, localcluster.Options{Dir: ClusterDir(opts.Dir), Pools: s.Pools, Detached: true, Log: log})
		if err != nil || !opts.Kueue {
			return s, err
		}
		if s.Kueue, err = startKueue(ctx, opts.Dir, s.ControlPlane, log); err != nil {
			return nil, errors.Join(err, Down(context.WithoutCancel(ctx), opts.Dir, log))
		}
		return s, nil
	}
	if err := s.startReal(ctx, m, opts, log); err != nil {
		return nil, errors.Join(err, Down(context.WithoutCancel(ctx), opts.Dir, log))
	}
	if opts.Kueue {
		if s.Kueue, err = startKueue(ctx, opts.Dir, s.ControlPlane, log); err != nil {
			return nil, errors.Join(err, Down(context.WithoutCancel(ctx), opts.Dir, log))
		}
	}
	fmt.Fprintf(log, "localstack: control plane and real node %s ready in %v\n", RealNodeName, time.Since(began).Round(time.Second))
	return s, nil
}

func (s *Stack) startReal(ctx context.Context, m *localcluster.Manifest, opts Options, log io.Writer) error {
	nodeBins, err := m.Node()
	if err != nil {
		return err
	}
	gpuvc := opts.Gpuvc
	if gpuvc == "" {
		if gpuvc, err = os.Executable(); err != nil {
			return err
		}
	}
	fmt.Fprintln(log, "localstack: building the node's images (cached after the first run)")
	tars, err := images.ForRealNode(m, gpuvc, images.DefaultDir())
	if err != nil {
		return err
	}
	// The node imports them after waiting for its slot, which another user of
	// the machine may hold for long: keep them in the cache until then.
	release, err := images.HoldAll(tars)
	if err != nil {
		return err
	}
	defer release()
	// The control plane first, then the node's slot, as every user of a real
	// node takes the two locks.
	if s.ControlPlane, err = localcluster.Start(ctx, localcluster.Options{
		Dir: ClusterDir(opts.Dir), NodeIP: localnode.NodeIP, Pools: s.Pools, Detached: true, Log: log,
	}); err != nil {
		return err
	}
	host, err := localnode.Acquire(ctx, log)
	if err != nil {
		return err
	}
	gpus := DefaultGPUs
	if opts.GPUs != nil {
		gpus = *opts.GPUs
	}
	system := nodepool.Pool{Name: RealPool}
	s.Node, err = localnode.Start(ctx, s.ControlPlane, nodeBins, localnode.Options{
		Name:          RealNodeName,
		Labels:        system.Labels(nodepool.Node{Name: RealNodeName}),
		Images:        tars,
		PauseImage:    images.PauseRef,
		GPUs:          &gpus,
		NetworkPolicy: true,
		Dir:           NodeDir(opts.Dir),
		Host:          host,
		Detached:      true,
		GPUAgent:      gpuvc,
		Log:           log,
	})
	if err != nil {
		return errors.Join(err, host.Release())
	}
	if err := s.startAddons(ctx, opts.Dir, log); err != nil {
		return errors.Join(err, host.Release())
	}
	return host.Leave()
}

// Down removes a stack Up left in dir: the real node and everything it made on
// this machine (processes, containers, mounts, cgroups, bridge, rules, paths),
// the control plane's processes, and dir. Nothing there: nothing to do.
func Down(ctx context.Context, dir string, log io.Writer) error {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	// Kueue first: its webhooks are the API server's to call.
	errs := []error{stopKueue(dir), localprom.StopDetached(PrometheusDir(dir)), localaddons.StopDetached(AddonsDir(dir))}
	if HasRealNode(dir) {
		if os.Geteuid() != 0 {
			return fmt.Errorf("a real node runs from %s: removing it needs root", NodeDir(dir))
		}
		errs = append(errs, localnode.Teardown(ctx, NodeDir(dir), log))
	}
	if err := localcluster.StopDetached(ClusterDir(dir)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return err // keep the folder: its records are what a second Down needs
	}
	return os.RemoveAll(dir)
}

// Running reports whether dir holds a stack whose API server runs.
func Running(dir string) bool {
	s, err := localcluster.ReadState(ClusterDir(dir))
	if err != nil {
		return false
	}
	pid, ok := s.PIDs[string(localcluster.APIServer)]
	return ok && localcluster.Alive(pid)
}

// HasRealNode reports whether dir holds a real node.
func HasRealNode(dir string) bool {
	_, err := os.Stat(NodeDir(dir))
	return err == nil
}

func withoutPool(pools []nodepool.Pool, name string) []nodepool.Pool {
	var out []nodepool.Pool
	for _, p := range pools {
		if p.Name != name {
			out = append(out, p)
		}
	}
	return out
}
