package localnode

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuvc/gpuvc/kind/supervise"
)

// Stop stops every component and removes everything the node created: its
// processes and every container (shims included), mounts, pod cgroups, pod
// network links, iptables rules and ipsets, fixed host paths, the Node object,
// and its folder if temporary. A host Start acquired itself is released. It is
// safe to call more than once.
func (n *Node) Stop() error {
	n.stopOnce.Do(func() { n.stopErr = n.stop() })
	return n.stopErr
}

func (n *Node) stop() error {
	began := time.Now()
	var errs []error
	if n.stopGPUs != nil {
		n.stopGPUs()
	}
	// Daemons first, newest first, so nothing restarts containers while they die.
	for i := len(n.procs) - 1; i >= 0; i-- {
		if n.procs[i].Name == string(Containerd) {
			continue
		}
		errs = append(errs, n.procs[i].Stop(5*time.Second))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	errs = append(errs, cleanupNode(ctx, n.st, n.procs...))
	cleaned := errors.Join(errs...)
	if cleaned != nil {
		n.logf("stopping node %s: %v", n.Name, cleaned)
	}
	errs = append(errs, n.host.detach(n, cleaned == nil))
	// The Node object goes last: a running kubelet would register it again. It
	// is API state, not the machine's: a control plane already gone is no error.
	if err := n.deleteNodeObject(ctx); err != nil {
		n.logf("%v", err)
	}
	if n.ownHost {
		errs = append(errs, n.host.Release())
	}
	n.logf("node %s stopped in %v", n.Name, time.Since(began).Round(time.Millisecond))
	return errors.Join(errs...)
}

// Leave lets this program exit while the detached node keeps running (Options.
// Detached): it gives up the machine's node slot without stopping anything.
// Teardown removes the node later.
func (n *Node) Leave() error {
	if !n.opts.Detached {
		return errors.New("localnode: only a detached node can be left running")
	}
	return n.host.Leave()
}

func (n *Node) deleteNodeObject(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	err := n.cp.Client.CoreV1().Nodes().Delete(ctx, n.Name, metav1.DeleteOptions{})
	if err == nil || apierrors.IsNotFound(err) {
		return nil
	}
	return fmt.Errorf("deleting node %s: %w", n.Name, err)
}

// cleanupNode removes everything a node records in st; procs are its daemons
// when this program started them (containerd is stopped here, after its
// containers and shims), none after a crash.
func cleanupNode(ctx context.Context, st *nodeState, procs ...*supervise.Process) error {
	// Processes are matched and mounts detached by this prefix: a corrupt record
	// must not widen it to the whole machine.
	if !safeToRemove(st.Dir) {
		return fmt.Errorf("localnode: refusing to clean up node folder %q", st.Dir)
	}
	var errs []error
	// Every container process lies in the node's pod cgroups.
	errs = append(errs, killCgroupProcs(10*time.Second))
	// Shims daemonize: find them by executable (and anything else, such as a
	// kubelet of a crashed run, by its arguments naming the node's folder).
	shim, _ := filepath.EvalSymlinks(st.Shim)
	errs = append(errs, killMatching(func(p procInfo) bool {
		if (shim != "" && p.exe == shim) || (st.Shim != "" && p.exe == st.Shim) {
			return true
		}
		return p.mentions(st.Dir+"/") && !isDaemon(p.pid, procs)
	}, 10*time.Second))
	for _, p := range procs {
		errs = append(errs, p.Stop(5*time.Second))
	}
	errs = append(errs, killMatching(func(p procInfo) bool { return p.mentions(st.Dir + "/") }, 10*time.Second))
	if err := unmountAll(st.Dir); err != nil {
		errs = append(errs, err)
	}
	errs = append(errs, removeCgroups(10*time.Second))
	errs = append(errs, deletePodLinks())
	errs = append(errs, kubeProxyCleanup(ctx, st.KubeProxy))
	errs = append(errs, cleanupIPTables(ctx, nodeChainPrefixes), cleanupIPSets(ctx))
	for _, p := range st.CreatedPaths {
		if !safeToRemove(p) {
			errs = append(errs, fmt.Errorf("localnode: refusing to remove %q", p))
			continue
		}
		if err := unmountAll(p); err != nil {
			errs = append(errs, err)
			continue
		}
		errs = append(errs, os.RemoveAll(p))
	}
	errs = append(errs, os.RemoveAll(shimSocketDir))
	if err := errors.Join(errs...); err != nil {
		// Never delete a folder that may still have something mounted in it.
		return err
	}
	if st.RemoveDir {
		return os.RemoveAll(st.Dir)
	}
	return nil
}

// safeToRemove accepts absolute paths at least two levels deep (/tmp/x,
// /var/lib/cni), never a top-level folder.
func safeToRemove(path string) bool {
	clean := filepath.Clean(path)
	return filepath.IsAbs(path) && clean == path && strings.Count(clean, "/") >= 2
}

func isDaemon(pid int, procs []*supervise.Process) bool {
	for _, p := range procs {
		if p.PID() == pid {
			return true
		}
	}
	return false
}
