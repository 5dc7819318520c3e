package localnode

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/gpuvc/gpuvc/kind/localcluster"
	"github.com/gpuvc/gpuvc/kind/supervise"
)

// Fixed places: only one node runs per machine (the kubelet's device-plugin
// folder, the cgroup root and the bridge are fixed), so the lock and the record of
// what was created are fixed too.
const (
	lockPath  = "/run/gpuvc-localnode.lock"
	stateDir  = "/run/gpuvc-localnode"
	stateFile = stateDir + "/state.json"
	// shimSocketDir holds containerd's shim sockets: containerd caps its length at
	// 38 characters, too short for a folder under the node's.
	shimSocketDir = stateDir + "/s"
)

// hostState is written before each thing it records is created, so a run that
// crashes at any point leaves enough for the next Acquire to undo it all.
type hostState struct {
	// Sysctls are the values before this host changed any.
	Sysctls map[string]string `json:"sysctls"`
	// NFTables are the nftables tables that existed before.
	NFTables []nftTable `json:"nftables"`
	Network  bool       `json:"network"` // bridge and guard rules
	Node     *nodeState `json:"node,omitempty"`
}

// nodeState is what a running node has that teardown must find.
type nodeState struct {
	Name      string `json:"name"`
	Dir       string `json:"dir"`
	RemoveDir bool   `json:"removeDir"`
	// CreatedPaths are fixed host paths that did not exist before the node.
	CreatedPaths []string `json:"createdPaths,omitempty"`
	// Shim and KubeProxy are executables: shims are found by their executable,
	// kube-proxy cleans its own rules.
	Shim      string `json:"shim,omitempty"`
	KubeProxy string `json:"kubeProxy,omitempty"`
	// Detached nodes outlive the program that started them; PIDs are their
	// daemons, so Acquire can tell a running detached node from a crashed run.
	Detached bool           `json:"detached,omitempty"`
	PIDs     map[string]int `json:"pids,omitempty"`
}

// Host is this machine's single slot for a real node: an exclusive lock, the node
// bridge with the node IP, and guard rules keeping pod traffic on the machine.
// Acquire it before starting the control plane (whose API server must advertise
// NodeIP), start nodes on it one after the other, and Release it at the end.
type Host struct {
	log  io.Writer
	lock *os.File

	mu       sync.Mutex
	st       hostState
	recorded bool // the state file is this host's (an earlier run's was undone)
	node     *Node
	released bool
}

// Acquire takes the machine's node lock, waiting for another holder until ctx
// ends, removes whatever a crashed earlier run left (processes, mounts, cgroups,
// network, rules, files), then creates the bridge and the guard rules. log
// receives progress lines; nil discards them.
func Acquire(ctx context.Context, log io.Writer) (h *Host, err error) {
	if log == nil {
		log = io.Discard
	}
	if os.Geteuid() != 0 {
		return nil, errors.New("localnode: a real node needs root (containerd, runc, cgroups, iptables, bridge)")
	}
	lock, err := localcluster.LockExclusive(ctx, lockPath, "another real node runs on this machine")
	if err != nil {
		return nil, err
	}
	h = &Host{log: log, lock: lock}
	defer func() {
		if err != nil {
			_ = h.Release()
		}
	}()
	if old, err := readState(); err != nil {
		return nil, err
	} else if running := old.detachedRunning(); running != "" {
		return nil, fmt.Errorf("localnode: a detached node (%s) runs on this machine: remove it first with `gpuvc dev trial down` or `gpuvc dev cluster down`", running)
	} else if old != nil {
		fmt.Fprintln(log, "localnode: removing what an earlier run left")
		if err := cleanupHost(ctx, old); err != nil {
			return nil, fmt.Errorf("cleaning up after an earlier run: %w", err)
		}
	}
	tables, err := nftTables(ctx)
	if err != nil {
		return nil, err
	}
	h.st = hostState{Sysctls: readSysctls(), NFTables: tables, Network: true}
	if err := h.save(); err != nil {
		return nil, err
	}
	h.recorded = true
	if err := ensureBridge(); err != nil {
		return nil, err
	}
	if err := cleanupIPTables(ctx, []string{guardPrefix}); err != nil {
		return nil, err
	}
	if err := installGuard(ctx); err != nil {
		return nil, err
	}
	// Routed pod traffic (pod → service → pod) needs forwarding; the bridge CNI
	// plugin would turn it on at the first pod anyway.
	if err := writeSysctl("net/ipv4/ip_forward", "1"); err != nil {
		return nil, err
	}
	return h, nil
}

// NodeIP is the node address on this host (see the package variable NodeIP).
func (h *Host) NodeIP() net.IP { return NodeIP }

// Release stops the host's node if one still runs, deletes the bridge and every
// rule and ipset of the node, restores the sysctls and drops the lock. It is safe
// to call more than once. If cleaning up fails, the record stays for the next
// Acquire to finish the job.
func (h *Host) Release() error {
	h.mu.Lock()
	if h.released {
		h.mu.Unlock()
		return nil
	}
	node := h.node
	h.mu.Unlock()
	var errs []error
	if node != nil {
		errs = append(errs, node.Stop())
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.released = true
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// If Acquire failed before recording anything, an earlier run's record
	// stays for the next Acquire.
	if h.recorded {
		if err := cleanupHost(ctx, &h.st); err != nil {
			errs = append(errs, err)
		} else {
			errs = append(errs, os.RemoveAll(stateDir))
		}
	}
	_ = syscall.Flock(int(h.lock.Fd()), syscall.LOCK_UN)
	errs = append(errs, h.lock.Close())
	return errors.Join(errs...)
}

// attach makes n the host's node and records it.
func (h *Host) attach(n *Node, st *nodeState) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.released {
		return errors.New("localnode: the host has been released")
	}
	if h.node != nil {
		return fmt.Errorf("localnode: node %s already runs on this host; only one node runs per machine", h.node.Name)
	}
	h.node, h.st.Node = n, st
	return h.save()
}

// detach forgets the stopped node. If its teardown failed, its record stays for
// Release (or the next Acquire) to try again.
func (h *Host) detach(n *Node, cleaned bool) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.node != n {
		return nil
	}
	h.node = nil
	if !cleaned || h.released {
		return nil
	}
	h.st.Node = nil
	return h.save()
}

// save writes the state atomically. Callers hold h.mu (or own h exclusively).
func (h *Host) save() error {
	if err := os.MkdirAll(stateDir, 0o700); err != nil {
		return err
	}
	b, err := json.MarshalIndent(h.st, "", "  ")
	if err != nil {
		return err
	}
	tmp := stateFile + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, stateFile)
}

func readState() (*hostState, error) {
	b, err := os.ReadFile(stateFile)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var st hostState
	if err := json.Unmarshal(b, &st); err != nil {
		return nil, fmt.Errorf("reading %s: %w", stateFile, err)
	}
	return &st, nil
}

// cleanupHost undoes everything st records: the node, then the network, then the
// sysctls.
func cleanupHost(ctx context.Context, st *hostState) error {
	var errs []error
	if st.Node != nil {
		if err := cleanupNode(ctx, st.Node); err != nil {
			errs = append(errs, err)
		} else {
			st.Node = nil
		}
	}
	if st.Network {
		errs = append(errs, deleteBridge(), cleanupIPTables(ctx, chainPrefixes))
		if err := errors.Join(errs...); err == nil {
			errs = append(errs, deleteNewEmptyTables(ctx, st.NFTables))
		}
	}
	errs = append(errs, restoreSysctls(st.Sysctls))
	return errors.Join(errs...)
}

// recordPID records a daemon of n (detached nodes only need it, all get it).
func (h *Host) recordPID(n *Node, name string, pid int) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.node != n || h.st.Node == nil {
		return nil
	}
	if h.st.Node.PIDs == nil {
		h.st.Node.PIDs = map[string]int{}
	}
	h.st.Node.PIDs[name] = pid
	return h.save()
}

// detachedRunning names the live daemons of a detached node st records, or "".
func (st *hostState) detachedRunning() string {
	if st == nil || st.Node == nil || !st.Node.Detached {
		return ""
	}
	var live []string
	for name, pid := range st.Node.PIDs {
		if supervise.Alive(pid) {
			live = append(live, fmt.Sprintf("%s %s pid %d", st.Node.Name, name, pid))
		}
	}
	sort.Strings(live)
	return strings.Join(live, ", ")
}

// Leave lets this program exit while its detached node keeps running: it drops
// the lock and keeps the record, which Teardown (or a later Acquire, once the
// node's daemons are gone) undoes.
func (h *Host) Leave() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.released {
		return nil
	}
	h.released = true
	_ = syscall.Flock(int(h.lock.Fd()), syscall.LOCK_UN)
	return h.lock.Close()
}

// Teardown removes everything a detached node whose folder is nodeDir and its
// host recorded — daemons, containers and shims, mounts, cgroups, pod links, the
// bridge, iptables rules, ipsets, nftables tables, sysctls, fixed paths, the
// node's folder — as Release does in the program that started them. Nothing
// recorded: nothing to do. It refuses to remove another folder's node (one
// real node per machine: the trial's and `gpuvc dev cluster`'s exclude each other).
func Teardown(ctx context.Context, nodeDir string, log io.Writer) error {
	if log == nil {
		log = io.Discard
	}
	if os.Geteuid() != 0 {
		return errors.New("localnode: removing a real node needs root")
	}
	lock, err := localcluster.LockExclusive(ctx, lockPath, "another real node runs on this machine")
	if err != nil {
		return err
	}
	defer lock.Close()
	st, err := readState()
	if err != nil || st == nil {
		return err
	}
	if st.Node != nil && filepath.Clean(st.Node.Dir) != filepath.Clean(nodeDir) {
		return fmt.Errorf("localnode: the real node on this machine runs from %s, not %s: remove it with the command that started it", st.Node.Dir, nodeDir)
	}
	if st.Node != nil {
		fmt.Fprintf(log, "localnode: removing node %s and everything it made\n", st.Node.Name)
	}
	if err := cleanupHost(ctx, st); err != nil {
		return err
	}
	return os.RemoveAll(stateDir)
}
