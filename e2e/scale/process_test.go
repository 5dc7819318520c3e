package scale

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/gpuvc/gpuvc/e2e/testsupport/gpuvcbin"
	"github.com/gpuvc/gpuvc/kind/localcluster"
)

// managerProcess is `gpuvc manager` running as its own process, with what
// the benchmark reads of it.
type managerProcess struct{ *gpuvcbin.Manager }

// startManager runs the manager against cp and waits until it serves. It
// returns the process and how long that took. extra are more flags of `gpuvc manager`.
func startManager(ctx context.Context, bin, dir string, cp *localcluster.ControlPlane, extra ...string) (*managerProcess, time.Duration, error) {
	m, err := gpuvcbin.StartManager(ctx, bin, cp.Kubeconfig, dir, extra...)
	if err != nil {
		return nil, 0, err
	}
	return &managerProcess{m}, m.StartedIn, nil
}

// usage is what /proc says of a process at one instant.
type usage struct {
	RSSKiB, PeakRSSKiB int64
	CPU                time.Duration // user + system
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
