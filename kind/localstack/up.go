package localstack

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/gpuvc/gpuvc/gpu/dra"
	"github.com/gpuvc/gpuvc/kind/bringup"
	"github.com/gpuvc/gpuvc/kind/localaddons"
	"github.com/gpuvc/gpuvc/kind/localcluster"
	"github.com/gpuvc/gpuvc/kind/localcluster/images"
	"github.com/gpuvc/gpuvc/kind/localnode"
	"github.com/gpuvc/gpuvc/kind/nodepool"
)

// upper carries a stack through Up's steps; each step fills in what the later
// ones need. A component of the stack is a step (or two) here: add one where
// it belongs in the order, and its removal to Down and Stack.Stop.
type upper struct {
	opts Options // Dir absolute
	log  io.Writer
	real bool // a real node runs (not KwokOnly)
	s    *Stack

	m        *localcluster.Manifest
	nodeBins *localcluster.NodeBinaries
	gpuvc    string   // the gpuvc binary of the image and the GPU agent
	tars     []string // the node's images
	release  func()   // lets the image cache remove tars again
	// emptied: the folder is this Up's; a failure from then on removes the stack.
	emptied bool
}

func newUpper(opts Options, log io.Writer) *upper {
	u := &upper{opts: opts, log: log, real: !opts.KwokOnly, release: func() {}}
	u.s = &Stack{Pools: opts.Pools, dir: opts.Dir, attached: opts.Attached}
	if u.s.Pools == nil {
		u.s.Pools = nodepool.Default()
		if u.real {
			u.s.Pools = withoutPool(u.s.Pools, RealPool)
		}
	}
	return u
}

// steps are Up's steps for u.opts, in order: checks that change nothing (the
// binaries, this machine), the folder emptied, the node's images, the control
// plane and the DRA DeviceClasses, then the machine's node slot and the real node (the locks in the
// order every user of a real node takes them), then Kueue.
func (u *upper) steps() []bringup.Step {
	steps := []bringup.Step{{Name: "check the prebuilt binaries", Run: u.checkBinaries}}
	if u.real {
		steps = append(steps, bringup.Step{Name: "check that this machine can run a real node", Run: u.checkMachine})
	}
	steps = append(steps, bringup.Step{Name: "empty the folder", Run: u.emptyDir})
	if u.real {
		steps = append(steps, bringup.Step{Name: "build the node's images (cached after the first run)", Run: u.buildImages})
	}
	steps = append(steps,
		bringup.Step{Name: "start the control plane", Run: u.startControlPlane},
		bringup.Step{Name: "install the DeviceClasses of the simulated GPUs' DRA driver", Run: u.installDeviceClasses},
	)
	if u.real {
		steps = append(steps,
			bringup.Step{Name: "take the machine's node slot", Run: u.acquireHost},
			bringup.Step{Name: "start the real node " + RealNodeName, Run: u.startNode},
			bringup.Step{Name: "start the storage provisioner, cluster DNS and metrics-server", Run: u.startAddons},
		)
	}
	if u.opts.Kueue {
		steps = append(steps, bringup.Step{Name: "start Kueue", Run: u.startKueue})
	}
	return steps
}

// checkBinaries reads the builder's manifest: the control plane's binaries
// and, for a real node, the node's.
func (u *upper) checkBinaries(context.Context) (err error) {
	if u.m, err = localcluster.LoadManifest(); err != nil {
		return err
	}
	if _, err := u.m.ControlPlane(); err != nil || !u.real {
		return err
	}
	u.nodeBins, err = u.m.Node()
	return err
}

func (u *upper) checkMachine(context.Context) error {
	if why := RealNodeUnavailable(); why != "" {
		return fmt.Errorf("%s; run as root, or choose kwok nodes only", why)
	}
	return nil
}

func (u *upper) emptyDir(context.Context) error {
	if err := os.RemoveAll(u.opts.Dir); err != nil {
		return err
	}
	u.emptied = true
	return os.MkdirAll(ClusterDir(u.opts.Dir), 0o700)
}

// buildImages builds (cached by content) every image the node runs, with
// Options.Gpuvc (else this program) in the gpuvc image, and holds them in the
// cache until Up returns: the node imports them only after waiting for its
// slot, which another user of the machine may hold for long.
func (u *upper) buildImages(context.Context) (err error) {
	if u.gpuvc = u.opts.Gpuvc; u.gpuvc == "" {
		if u.gpuvc, err = os.Executable(); err != nil {
			return err
		}
	}
	if u.tars, err = images.ForRealNode(u.m, u.gpuvc, images.DefaultDir()); err != nil {
		return err
	}
	u.release, err = images.HoldAll(u.tars)
	return err
}

func (u *upper) startControlPlane(ctx context.Context) (err error) {
	opts := localcluster.Options{Dir: ClusterDir(u.opts.Dir), Pools: u.s.Pools, Detached: !u.opts.Attached, Log: u.log}
	if u.real {
		opts.NodeIP = localnode.NodeIP
	}
	u.s.ControlPlane, err = localcluster.Start(ctx, opts)
	return err
}

// installDeviceClasses installs the classes claims name to get a simulated
// GPU or MIG device of the DRA driver (gpu/dra), the real node's and the kwok
// nodes' alike.
func (u *upper) installDeviceClasses(ctx context.Context) error {
	return dra.EnsureDeviceClasses(ctx, u.s.ControlPlane.Client)
}

func (u *upper) acquireHost(ctx context.Context) (err error) {
	u.s.host, err = localnode.Acquire(ctx, u.log)
	return err
}

// startNode starts the real node: the system pool, with simulated GPUs
// (Options.GPUs, else DefaultGPUs) served by the node's `gpuvc agent` daemon
// unless Options.InProcessGPUs. A detached node then leaves the machine's
// slot: Down takes it again to remove the node.
func (u *upper) startNode(ctx context.Context) (err error) {
	gpus := DefaultGPUs
	if u.opts.GPUs != nil {
		gpus = *u.opts.GPUs
	}
	agent := u.gpuvc
	if u.opts.InProcessGPUs {
		agent = ""
	}
	system := nodepool.Pool{Name: RealPool}
	if u.s.Node, err = localnode.Start(ctx, u.s.ControlPlane, u.nodeBins, localnode.Options{
		Name:          RealNodeName,
		Labels:        system.Labels(nodepool.Node{Name: RealNodeName}),
		Images:        u.tars,
		PauseImage:    images.PauseRef,
		GPUs:          &gpus,
		NetworkPolicy: true,
		// kube-dns, which the add-ons step starts (kind/localaddons).
		ClusterDNS: []string{localaddons.DNSServiceIP},
		Dir:        NodeDir(u.opts.Dir),
		Host:       u.s.host,
		Detached:   !u.opts.Attached,
		GPUAgent:   agent,
		Log:        u.log,
	}); err != nil || u.opts.Attached {
		return err
	}
	err = u.s.host.Leave()
	u.s.host = nil
	return err
}

func (u *upper) startKueue(ctx context.Context) (err error) {
	u.s.Kueue, err = startKueue(ctx, u.opts.Dir, u.s.ControlPlane, !u.opts.Attached, u.log)
	return err
}

// undo removes what Up's steps did before one failed, once the folder is
// this Up's (before, Up changed nothing): an attached stack stops, a detached
// one frees the machine's node slot if it still holds it and is taken down.
func (u *upper) undo(ctx context.Context) error {
	if !u.emptied {
		return nil
	}
	if u.opts.Attached {
		return u.s.Stop()
	}
	var errs []error
	if u.s.host != nil {
		errs = append(errs, u.s.host.Release())
	}
	return errors.Join(append(errs, Down(ctx, u.opts.Dir, u.log))...)
}
