package localnode

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/gpuvc/gpuvc/kind/bringup"
)

// steps are Start's steps for n.opts, in order: the prerequisites, the
// machine's node slot (unless Options.Host holds it) and the node's record on
// it, then containerd with the images, the GPUs, the kubelet and kube-proxy,
// each waited for (the GPUs handed to DRA by their ResourceSlice), and
// kube-router with NetworkPolicy.
func (n *Node) steps() []bringup.Step {
	steps := []bringup.Step{{Name: "check the prerequisites", Run: n.checkPrerequisites}}
	if n.opts.Host == nil {
		steps = append(steps, bringup.Step{Name: "take the machine's node slot", Run: n.acquireHost})
	}
	steps = append(steps,
		bringup.Step{Name: "record the node on the host", Run: n.recordOnHost},
		bringup.Step{Name: "create the cgroup root", Run: func(context.Context) error { return createCgroupRoot() }},
		bringup.Step{Name: "start " + string(Containerd), Run: n.startContainerd},
		bringup.Step{Name: "import the images", Run: n.importImages},
		bringup.Step{Name: "check the sandbox image", Run: n.checkPauseImage},
	)
	if n.opts.GPUs != nil {
		steps = append(steps, bringup.Step{Name: "serve the simulated GPUs", Run: n.serveGPUs})
	}
	steps = append(steps,
		bringup.Step{Name: "start the " + string(Kubelet), Run: n.startKubelet},
		bringup.Step{Name: "start " + string(KubeProxy), Run: n.startKubeProxy},
		bringup.Step{Name: "wait for the node to be Ready", Run: n.waitReady},
	)
	if n.opts.GPUs != nil {
		steps = append(steps, bringup.Step{Name: "wait for the GPUs in the node's allocatable", Run: n.waitGPUs})
	}
	if n.opts.GPUs != nil && n.opts.GPUs.DRA > 0 {
		steps = append(steps, bringup.Step{Name: "wait for the DRA ResourceSlice of the simulated GPUs", Run: n.waitDRA})
	}
	steps = append(steps, bringup.Step{Name: "wait for " + string(KubeProxy), Run: n.waitKubeProxy})
	if n.opts.NetworkPolicy {
		steps = append(steps,
			bringup.Step{Name: "start " + string(KubeRouter), Run: n.startKubeRouter},
			bringup.Step{Name: "wait for " + string(KubeRouter), Run: n.waitKubeRouter},
		)
	}
	return steps
}

func (n *Node) checkPrerequisites(context.Context) error { return checkPrerequisites(n.bins, n.opts) }

// acquireHost takes the machine's node slot for this node alone: Stop
// releases it.
func (n *Node) acquireHost(ctx context.Context) (err error) {
	if n.host, err = Acquire(ctx, n.log); err != nil {
		return err
	}
	n.ownHost = true
	return nil
}

// recordOnHost makes the node's folder (a temporary one unless Options.Dir
// names it) and records the node on the host — its folder and the fixed host
// paths it will create — before anything else is created, so that Stop, or a
// later Acquire after a crash, finds everything.
func (n *Node) recordOnHost(context.Context) (err error) {
	n.st = &nodeState{Name: n.Name, Dir: n.opts.Dir, Shim: n.bins.ContainerdShim, KubeProxy: n.bins.KubeProxy, Detached: n.opts.Detached}
	if n.st.Dir == "" {
		if n.st.Dir, err = os.MkdirTemp("", "gpuvc-node-"); err != nil {
			return err
		}
		n.st.RemoveDir = true
	}
	n.Dir = n.st.Dir
	for _, p := range fixedPaths {
		if top := topMissing(p); top != "" {
			n.st.CreatedPaths = append(n.st.CreatedPaths, top)
		}
	}
	if err := n.host.attach(n, n.st); err != nil {
		return err
	}
	n.recorded = true
	n.logf("node %s in %s", n.Name, n.Dir)
	return os.MkdirAll(n.path("logs"), 0o755)
}

// abort undoes what Start's steps did before one failed: once the node is
// recorded on the host, all that Stop removes; before, its temporary folder
// and a host Start acquired itself.
func (n *Node) abort() error {
	if n.recorded {
		if err := n.Stop(); err != nil {
			return fmt.Errorf("cleaning up: %w", err)
		}
		return nil
	}
	if n.st != nil && n.st.RemoveDir {
		_ = os.RemoveAll(n.Dir)
	}
	if n.ownHost {
		_ = n.host.Release()
	}
	return nil
}

func (n *Node) importImages(ctx context.Context) error { return n.ImportImages(ctx, n.opts.Images...) }

func (n *Node) checkPauseImage(ctx context.Context) error {
	return n.checkImage(ctx, n.opts.PauseImage)
}

// waitReady waits until the node is registered, labelled and Ready, and warns
// when the control plane does not advertise the node IP.
func (n *Node) waitReady(ctx context.Context) error {
	if err := n.waitNode(ctx); err != nil {
		return err
	}
	n.ReadyAfter = time.Since(n.kubeletStarted)
	n.logf("node %s Ready %v after the kubelet started", n.Name, n.ReadyAfter.Round(time.Millisecond))
	n.checkAdvertisedIP(ctx)
	return nil
}

func (n *Node) waitKubeProxy(ctx context.Context) error {
	return n.waitHTTP(ctx, KubeProxy, fmt.Sprintf("http://127.0.0.1:%d/healthz", n.proxyHealthz))
}

func (n *Node) waitKubeRouter(ctx context.Context) error {
	return n.waitHTTP(ctx, KubeRouter, fmt.Sprintf("http://127.0.0.1:%d/healthz", n.routerHealthz))
}
