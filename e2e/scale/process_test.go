package scale

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/gpuvc/gpuvc/e2e/testsupport/gpuvcbin"
	"github.com/gpuvc/gpuvc/kind/localcluster"
)

// managerProcess is `gpuvc manager` running as its own process, with what
// the benchmark reads of it.
type managerProcess struct {
	*gpuvcbin.Manager
	cp *localcluster.ControlPlane
	// pprof is the base URL of its /debug/pprof/ ("" if the build has none).
	pprof string
	// dir holds its log: why a manager that exited did (logTail).
	dir string
}

// startManager runs the manager against cp and waits until it serves. It
// returns the process and how long that took. extra are more flags of `gpuvc manager`.
func startManager(ctx context.Context, bin, dir string, cp *localcluster.ControlPlane, extra ...string) (*managerProcess, time.Duration, error) {
	pprof := ""
	if servesPprof(bin) {
		ports, err := localcluster.FreePorts(1)
		if err != nil {
			return nil, 0, err
		}
		pprof = fmt.Sprintf("http://127.0.0.1:%d/debug/pprof/", ports[0])
		extra = append(extra, "--pprof-bind-address", fmt.Sprintf("127.0.0.1:%d", ports[0]))
	}
	m, err := gpuvcbin.StartManager(ctx, bin, cp.Kubeconfig, dir, extra...)
	if err != nil {
		return nil, 0, fmt.Errorf("%w\n%s", err, logTail(dir))
	}
	return &managerProcess{Manager: m, cp: cp, pprof: pprof, dir: dir}, m.StartedIn, nil
}

// servesPprof: the build has --pprof-bind-address (an older one, run through
// BENCH_GPUVC_BIN to compare, may not).
func servesPprof(bin string) bool {
	out, _ := exec.Command(bin, "manager", "--help").CombinedOutput()
	return strings.Contains(string(out), "--pprof-bind-address")
}

// liveHeap is the manager's Go heap just after a collection (HeapAlloc of a
// heap profile taken with gc=1): what its objects hold, without the garbage
// and the free pages RSS and heap-in-use also count. 0 without pprof. With
// BENCH_PROFILE_DIR set, the heap profile is kept there as name.pb.gz.
func (m *managerProcess) liveHeap(ctx context.Context, name string) (float64, error) {
	if m.pprof == "" {
		return 0, nil
	}
	get := func(query string) ([]byte, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, m.pprof+"heap?"+query, nil)
		if err != nil {
			return nil, err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		return io.ReadAll(resp.Body)
	}
	if dir := os.Getenv("BENCH_PROFILE_DIR"); dir != "" {
		b, err := get("gc=1")
		if err != nil {
			return 0, err
		}
		if err := os.WriteFile(filepath.Join(dir, name+".pb.gz"), b, 0o644); err != nil {
			return 0, err
		}
	}
	b, err := get("gc=1&debug=1")
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "# HeapAlloc = "); ok {
			n, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			return n, err
		}
	}
	return 0, fmt.Errorf("%sheap?debug=1: no HeapAlloc", m.pprof)
}

// usage is what /proc says of a process at one instant.
type usage struct {
	RSSKiB, PeakRSSKiB int64
	// AnonKiB is the anonymous part of RSS (heap, stacks: the process's own);
	// the rest is mostly the binary's pages, which the kernel may drop and
	// other processes of the same binary share.
	AnonKiB int64
	CPU     time.Duration // user + system
}

// clockTicks is USER_HZ, 100 on every Linux this runs on.
const clockTicks = 100

func (m *managerProcess) usage() (usage, error) {
	pid := m.PID()
	var u usage
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return u, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, _ := strings.Cut(sc.Text(), ":")
		n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		switch k {
		case "VmRSS":
			u.RSSKiB = n
		case "VmHWM":
			u.PeakRSSKiB = n
		case "RssAnon":
			u.AnonKiB = n
		}
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return u, err
	}
	// Fields after the command name (which may hold spaces): state is field 3,
	// utime and stime are fields 14 and 15.
	rest := string(stat[strings.LastIndexByte(string(stat), ')')+2:])
	fs := strings.Fields(rest)
	if len(fs) < 13 {
		return u, fmt.Errorf("/proc/%d/stat: %q", pid, stat)
	}
	ut, _ := strconv.ParseInt(fs[11], 10, 64)
	st, _ := strconv.ParseInt(fs[12], 10, 64)
	u.CPU = time.Duration(ut+st) * time.Second / clockTicks
	return u, nil
}

// logTail is the end of the newest manager log in dir (the test's folder goes
// with the test): why a manager that exited did.
func logTail(dir string) string {
	logs, _ := filepath.Glob(filepath.Join(dir, "manager-*.log"))
	if len(logs) == 0 {
		return "(no manager log)"
	}
	sort.Strings(logs)
	b, err := os.ReadFile(logs[len(logs)-1])
	if err != nil {
		return err.Error()
	}
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

// profileCPU starts a CPU profile of the manager for d, kept in
// BENCH_PROFILE_DIR as name-cpu.pb.gz (nothing without it or without pprof);
// the function returned waits for it.
func (m *managerProcess) profileCPU(ctx context.Context, name string, d time.Duration) func() {
	dir := os.Getenv("BENCH_PROFILE_DIR")
	if dir == "" || m.pprof == "" {
		return func() {}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		url := fmt.Sprintf("%sprofile?seconds=%d", m.pprof, int(d.Seconds()))
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return
		}
		defer resp.Body.Close()
		if b, err := io.ReadAll(resp.Body); err == nil && resp.StatusCode == http.StatusOK {
			_ = os.WriteFile(filepath.Join(dir, name+"-cpu.pb.gz"), b, 0o644)
		}
	}()
	return func() { <-done }
}
