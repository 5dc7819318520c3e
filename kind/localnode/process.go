package localnode

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/gpuvc/gpuvc/kind/supervise"
)

// procInfo is what /proc says about a process.
type procInfo struct {
	pid  int
	exe  string   // resolved executable, without a " (deleted)" suffix
	args []string // command line
}

// listProcs returns every process of the machine but this one.
func listProcs() []procInfo {
	entries, _ := os.ReadDir("/proc")
	self := os.Getpid()
	var out []procInfo
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		dir := filepath.Join("/proc", e.Name())
		exe, _ := os.Readlink(filepath.Join(dir, "exe"))
		cmdline, _ := os.ReadFile(filepath.Join(dir, "cmdline"))
		var args []string
		for _, a := range bytes.Split(bytes.TrimRight(cmdline, "\x00"), []byte{0}) {
			args = append(args, string(a))
		}
		out = append(out, procInfo{pid: pid, exe: strings.TrimSuffix(exe, " (deleted)"), args: args})
	}
	return out
}

// mentions reports whether any argument of the process contains s.
func (p procInfo) mentions(s string) bool {
	for _, a := range p.args {
		if strings.Contains(a, s) {
			return true
		}
	}
	return false
}

// killMatching SIGKILLs every process match selects, again until none is left or
// the timeout passes (a dying daemon may still fork).
func killMatching(match func(procInfo) bool, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		var left []procInfo
		for _, p := range listProcs() {
			if match(p) && supervise.Alive(p.pid) {
				_ = syscall.Kill(p.pid, syscall.SIGKILL)
				left = append(left, p)
			}
		}
		if len(left) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("processes still running after SIGKILL: %v", describe(left))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func describe(ps []procInfo) []string {
	var out []string
	for _, p := range ps {
		out = append(out, fmt.Sprintf("%d %s", p.pid, strings.Join(p.args, " ")))
	}
	return out
}

// rssBytes returns a process's resident set size, or 0 if it is gone.
func rssBytes(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb * 1024
		}
	}
	return 0
}
