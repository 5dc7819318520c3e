package localnode_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/gpuvc/gpuvc/e2e/localcp"
	"github.com/gpuvc/gpuvc/gpu/inventory"
	"github.com/gpuvc/gpuvc/kind/localcluster"
	"github.com/gpuvc/gpuvc/kind/localcluster/images"
	"github.com/gpuvc/gpuvc/kind/localnode"
	"github.com/gpuvc/gpuvc/kind/nodepool"
)

// Fixed host paths the kubelet, containerd and the CNI plugins use.
var fixedHostPaths = []string{
	"/var/lib/kubelet", "/var/log/containers", "/var/log/pods", "/var/lib/cni",
	"/run/containerd", "/run/netns", "/run/gpuvc-localnode",
}

// TestStopLeavesNothing runs a node with every part (GPUs, NetworkPolicy, a pod
// with a host port), stops it, and finds nothing of it left: no process, mount,
// cgroup, bridge, iptables chain, ipset, fixed path or folder.
func TestStopLeavesNothing(t *testing.T) {
	cp := forTest(t)
	ctx := testContext(t)
	missingBefore := missingPaths(fixedHostPaths)
	n, err := localnode.Start(ctx, cp, nodeBins, localnode.Options{
		Name:          "teardown",
		Images:        imageTars,
		PauseImage:    images.PauseRef,
		GPUs:          &inventory.Spec{Product: "NVIDIA-A100-SXM4-80GB", Count: 1},
		NetworkPolicy: true,
		Log:           testWriter{t},
	})
	require.NoError(t, err)
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			_ = n.Stop()
		}
	})
	ns := namespace(t, ctx, cp, "teardown")
	_, took := runPod(t, ctx, cp, workloadPod("hostport", ns, "exec nc -ll -p 8080 -e /bin/echo pong").Edit(func(p *corev1.Pod) {
		p.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 8080, HostPort: 18080}}
	}).GPUs("1").Obj())
	t.Logf("pod create → Running: %v", took.Round(time.Millisecond))
	for c, rss := range n.RSS() {
		t.Logf("RSS %s: %d MiB", c, rss>>20)
	}

	pids := n.PIDs()
	shims := shimPIDs()
	containers := cgroupPIDs(t)
	require.NotEmpty(t, shims, "no shim runs")
	require.NotEmpty(t, containers, "no container process in the node's cgroups")
	chains := ownChains(t)
	require.NotEmpty(t, chains, "no KUBE-/CNI- chain before Stop")
	require.NotEmpty(t, mountsUnder(t, n.Dir), "no mount under the node folder before Stop")

	began := time.Now()
	require.NoError(t, n.Stop())
	stopped = true
	t.Logf("Stop took %v", time.Since(began).Round(time.Millisecond))
	require.NoError(t, n.Stop(), "Stop is idempotent")

	for name, pid := range pids {
		require.False(t, localcluster.Alive(pid), "%s (pid %d) survived Stop", name, pid)
	}
	for _, pid := range append(shims, containers...) {
		require.False(t, localcluster.Alive(pid), "pid %d survived Stop", pid)
	}
	requireNothingLeft(t, n.Dir)
	require.Equal(t, missingBefore, missingPaths(fixedHostPaths), "fixed host paths created and not removed")
	_, err = cp.Client.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{})
	require.Error(t, err, "the Node object outlived Stop")
}

// requireNothingLeft checks the machine for anything of a node whose folder was dir.
func requireNothingLeft(t *testing.T, dir string) {
	t.Helper()
	require.Empty(t, processesMentioning(dir), "processes of the node survive")
	require.Empty(t, shimPIDs(), "containerd shims survive")
	require.Empty(t, mountsUnder(t, dir), "mounts under the node folder survive")
	require.Empty(t, cgroupsLeft(), "cgroups under /gpuvc-node survive")
	_, err := os.Stat("/sys/class/net/gpuvc0")
	require.True(t, os.IsNotExist(err), "the bridge gpuvc0 survives")
	require.Empty(t, ownChains(t), "iptables chains survive")
	require.Empty(t, ownIPSets(t), "ipsets survive")
	_, err = os.Stat(dir)
	require.True(t, os.IsNotExist(err), "node folder %s survives", dir)
}

const crashHelperEnv = "GPUVC_LOCALNODE_CRASH_HELPER"

// crashRecord is what the crashing helper leaves for the parent test.
type crashRecord struct {
	Dir        string `json:"dir"`
	Daemons    []int  `json:"daemons"`
	Shims      []int  `json:"shims"`
	Containers []int  `json:"containers"`
}

// TestCrashedNodeIsCleanedUp runs this test binary again as a helper that starts
// a control plane and a node with a running pod, then panics without cleanup.
// Its daemons die with it (Pdeathsig) while containerd's shims and the containers
// live on; the next Start must remove all of that before it starts its own node.
func TestCrashedNodeIsCleanedUp(t *testing.T) {
	cp := forTest(t)
	ctx := testContext(t)
	record := filepath.Join(t.TempDir(), "crash.json")
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestCrashHelper$", "-test.v")
	cmd.Env = append(os.Environ(), crashHelperEnv+"="+record)
	out, err := cmd.CombinedOutput()
	require.Error(t, err, "the helper must fail by panicking; output:\n%s", out)
	require.Contains(t, string(out), "panic: helper crashes with a node running", "output:\n%s", out)
	b, err := os.ReadFile(record)
	require.NoError(t, err, "helper output:\n%s", out)
	var rec crashRecord
	require.NoError(t, json.Unmarshal(b, &rec))

	err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 20*time.Second, true, func(context.Context) (bool, error) {
		return !slices.ContainsFunc(rec.Daemons, localcluster.Alive), nil
	})
	require.NoError(t, err, "the node's daemons outlived the crashed helper")
	require.True(t, slices.ContainsFunc(rec.Shims, localcluster.Alive), "expected the crash to leave shims running")

	began := time.Now()
	startNode(t, ctx, cp, localnode.Options{Name: "after-crash"})
	t.Logf("Start with cleanup of the crashed run took %v", time.Since(began).Round(time.Millisecond))
	for _, pid := range append(rec.Shims, rec.Containers...) {
		require.False(t, localcluster.Alive(pid), "pid %d of the crashed run survived", pid)
	}
	require.Empty(t, processesMentioning(rec.Dir))
	require.Empty(t, mountsUnder(t, rec.Dir))
	_, err = os.Stat(rec.Dir)
	require.True(t, os.IsNotExist(err), "the crashed run's folder %s survives", rec.Dir)
}

func TestCrashHelper(t *testing.T) {
	record := os.Getenv(crashHelperEnv)
	if record == "" {
		t.Skip("helper for TestCrashedNodeIsCleanedUp")
	}
	ctx := context.Background()
	var err error
	nodeBins, err = localcp.EnsureNodeBinaries(ctx, os.Stderr)
	require.NoError(t, err)
	tars, err := buildImages(ctx)
	require.NoError(t, err)
	// Its own control plane, next to the package's (which holds port 6443).
	port, err := freePort()
	require.NoError(t, err)
	cp, err := localcp.Start(ctx, localcluster.Options{NodeIP: localnode.NodeIP, APIPort: port, Pools: []nodepool.Pool{}, Dir: filepath.Join(filepath.Dir(record), "cp")})
	require.NoError(t, err)
	n, err := localnode.Start(ctx, cp, nodeBins, localnode.Options{Name: "crashing", Images: tars, PauseImage: images.PauseRef, Log: testWriter{t}})
	require.NoError(t, err)
	runPod(t, ctx, cp, workloadPod("victim", "default", "exec sleep 3600").Obj())
	var daemons []int
	for _, pid := range n.PIDs() {
		daemons = append(daemons, pid)
	}
	b, _ := json.Marshal(crashRecord{Dir: n.Dir, Daemons: daemons, Shims: shimPIDs(), Containers: cgroupPIDs(t)})
	require.NoError(t, os.WriteFile(record, b, 0o644))
	panic("helper crashes with a node running")
}

func missingPaths(paths []string) []string {
	var missing []string
	for _, p := range paths {
		if _, err := os.Lstat(p); err != nil {
			missing = append(missing, p)
		}
	}
	return missing
}

// shimPIDs lists the running containerd runc shims of the node binaries.
func shimPIDs() []int {
	shim, _ := filepath.EvalSymlinks(nodeBins.ContainerdShim)
	var pids []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		exe, _ := os.Readlink(filepath.Join("/proc", e.Name(), "exe"))
		if exe != "" && strings.TrimSuffix(exe, " (deleted)") == shim && localcluster.Alive(pid) {
			pids = append(pids, pid)
		}
	}
	return pids
}

func processesMentioning(s string) []string {
	var found []string
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if strings.Contains(string(cmdline), s+"/") && localcluster.Alive(pid) {
			found = append(found, e.Name()+" "+strings.ReplaceAll(string(cmdline), "\x00", " "))
		}
	}
	return found
}

// cgroupPIDs lists the processes in the node's cgroups (pids hierarchy).
func cgroupPIDs(t *testing.T) []int {
	var pids []int
	for _, d := range cgroupsLeft() {
		b, err := os.ReadFile(filepath.Join(d, "cgroup.procs"))
		if err != nil {
			continue
		}
		for _, f := range strings.Fields(string(b)) {
			pid, err := strconv.Atoi(f)
			require.NoError(t, err)
			if !slices.Contains(pids, pid) {
				pids = append(pids, pid)
			}
		}
	}
	return pids
}

// cgroupsLeft lists every cgroup under /gpuvc-node in any hierarchy.
func cgroupsLeft() []string {
	var dirs []string
	roots, _ := filepath.Glob("/sys/fs/cgroup/*/gpuvc-node")
	if _, err := os.Stat("/sys/fs/cgroup/gpuvc-node"); err == nil {
		roots = append(roots, "/sys/fs/cgroup/gpuvc-node")
	}
	for _, r := range roots {
		_ = filepath.WalkDir(r, func(p string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, p)
			}
			return nil
		})
	}
	return dirs
}

func mountsUnder(t *testing.T, dir string) []string {
	f, err := os.Open("/proc/self/mountinfo")
	require.NoError(t, err)
	defer f.Close()
	var found []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) > 4 && strings.HasPrefix(fields[4], dir+"/") {
			found = append(found, fields[4])
		}
	}
	return found
}

// ownChains lists the iptables chains named like the node's (KUBE-, CNI-, GPUVC-).
func ownChains(t *testing.T) []string {
	var found []string
	for _, save := range []string{"iptables-save", "ip6tables-save"} {
		out, err := exec.Command(save).Output()
		require.NoError(t, err)
		for _, line := range strings.Split(string(out), "\n") {
			for _, p := range []string{":KUBE-", ":CNI-", ":GPUVC-"} {
				if strings.HasPrefix(line, p) {
					found = append(found, save+" "+strings.Fields(line)[0])
				}
			}
		}
	}
	return found
}

func ownIPSets(t *testing.T) []string {
	out, err := exec.Command("ipset", "list", "-n").Output()
	require.NoError(t, err)
	var found []string
	for _, name := range strings.Fields(string(out)) {
		if strings.Contains(name, "KUBE-") {
			found = append(found, name)
		}
	}
	return found
}

// freePort returns a TCP port nothing listens on now.
func freePort() (int, error) {
	l, err := net.Listen("tcp", ":0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
