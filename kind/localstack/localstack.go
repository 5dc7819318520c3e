// Package localstack runs, detached from the program that starts it, the local
// cluster (kind/localcluster: etcd, kube-apiserver, controller manager,
// scheduler, kwok GPU nodes) with one real node (kind/localnode: kubelet,
// containerd, runc, kube-proxy, kube-router, simulated GPUs served by a gpuvc
// agent daemon through the device plugin and, those Spec.DRA hands over,
// through gpuvc's DRA driver, whose DeviceClasses the stack installs) and
// every image the node needs for gpuvc and vCluster imported.
// `gpuvc dev cluster up` and the Docker-less trial run it; Down removes it all.
// The end-to-end suite's real-node backend runs the same stack attached to the
// test process (Options.Attached; Stack.Stop removes it). Up is a list of named
// steps (up.go), in the manner of kind's create actions. It needs the prebuilt
// binaries of the manifest (`make binaries`) and, for the real node, root.
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
	"github.com/gpuvc/gpuvc/kind/bringup"
	"github.com/gpuvc/gpuvc/kind/localaddons"
	"github.com/gpuvc/gpuvc/kind/localcluster"
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
// seven A100-80GB. The device plugin serves the first four, two whole and two
// in MIG mode with the balanced layout (nvidia.com/gpu: 2 and the MIG
// resources, as before DRA); the DRA driver serves the last three (DRA: 3),
// two whole (devices gpu-4, gpu-5 of class gpu.nvidia.com) and one in MIG
// mode with the balanced layout (four devices of class mig.nvidia.com).
var DefaultGPUs = inventory.Spec{
	Product: nodepool.ProductA100_80GB, Count: 7, DRA: 3,
	MIG: []string{"all-disabled", "all-disabled", "all-balanced", "all-balanced", "all-disabled", "all-disabled", "all-balanced"},
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
	// Attached ties the stack to this program, as a test wants it: its
	// processes end with it, and Stack.Stop removes the stack. Otherwise the
	// stack runs detached and Down removes it.
	Attached bool
	// InProcessGPUs serves the real node's simulated GPUs from this program
	// (Attached only) instead of a `gpuvc agent` daemon of the node: no agent
	// then publishes the GPU inventory or reacts to GPU health, so the node's
	// taints stay as a test sets them.
	InProcessGPUs bool
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
	// Addons are the storage provisioner, cluster DNS and metrics-server of a real
	// node (kind/localaddons), nil with KwokOnly.
	Addons *localaddons.Addons

	dir      string
	attached bool
	host     *localnode.Host // the machine's node slot while this program holds it (attached, or during Up)
	stopped  bool
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

// Up starts the stack in opts.Dir (emptied first) and leaves it running. It
// runs the steps of up.go in order, each named in the progress on Options.Log
// and, when it fails, in the error. On error it removes what it started.
func Up(ctx context.Context, opts Options) (*Stack, error) {
	if opts.Dir == "" {
		return nil, errors.New("localstack: Options.Dir is required")
	}
	if opts.InProcessGPUs && !opts.Attached {
		return nil, errors.New("localstack: Options.InProcessGPUs needs Attached: only the node's GPU agent serves GPUs after this program exits")
	}
	// The node's teardown matches processes and mounts by this folder: absolute.
	var err error
	if opts.Dir, err = filepath.Abs(opts.Dir); err != nil {
		return nil, err
	}
	log := opts.Log
	if log == nil {
		log = io.Discard
	}
	began := time.Now()
	u := newUpper(opts, log)
	err = bringup.Run(ctx, "localstack", log, u.steps())
	u.release()
	if err != nil {
		return nil, errors.Join(err, u.undo(context.WithoutCancel(ctx)))
	}
	if u.real {
		fmt.Fprintf(log, "localstack: control plane and real node %s ready in %v\n", RealNodeName, time.Since(began).Round(time.Second))
	}
	return u.s, nil
}

// Stop removes a stack Up started with Options.Attached: Kueue, the real node
// (every pod, mount, cgroup and rule with it), the control plane, the
// machine's node slot, then the folder. It is safe to call more than once. A
// detached stack is Down's to remove.
func (s *Stack) Stop() error {
	if !s.attached {
		return errors.New("localstack: a detached stack is removed by Down")
	}
	if s.stopped {
		return nil
	}
	s.stopped = true
	var errs []error
	if s.Kueue != nil {
		errs = append(errs, s.Kueue.Stop())
	}
	if s.Addons != nil {
		errs = append(errs, s.Addons.Stop())
	}
	if s.Node != nil {
		errs = append(errs, s.Node.Stop())
	}
	if s.ControlPlane != nil {
		errs = append(errs, s.ControlPlane.Stop())
	}
	if s.host != nil {
		errs = append(errs, s.host.Release())
	}
	if err := errors.Join(errs...); err != nil {
		return err // keep the folder: something of the node may still be mounted in it
	}
	return os.RemoveAll(s.dir)
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
