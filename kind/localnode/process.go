package localnode

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// process is one daemon of the node; its output goes to <logDir>/<name>.log.
type process struct {
	name    string
	bin     string
	cmd     *exec.Cmd
	logPath string
	done    chan struct{} // closed when the process has exited
	waitErr error
}

// startProcess starts bin with args and extra environment. The child gets SIGKILL
// when this program dies (Pdeathsig), like localcluster's components; what it forks off
// on purpose (containerd's shims) is found and killed by Stop or the next Acquire.
// A detached child gets its own session instead and outlives this program.
func startProcess(name, bin string, args, env []string, logDir string, detached bool) (*process, error) {
	logPath := filepath.Join(logDir, name+".log")
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer logFile.Close() // the child holds its own descriptor
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.Dir = logDir
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if detached {
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s (%s): %w", name, bin, err)
	}
	p := &process{name: name, bin: bin, cmd: cmd, logPath: logPath, done: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

func (p *process) pid() int { return p.cmd.Process.Pid }

// exited reports whether the process has ended, with its error and the tail of its log.
func (p *process) exited() error {
	select {
	case <-p.done:
		return fmt.Errorf("%s exited (%v); last log lines:\n%s", p.name, p.waitErr, tail(p.logPath, 20))
	default:
		return nil
	}
}

// stop sends SIGTERM, waits up to grace, then SIGKILLs and waits for the exit.
func (p *process) stop(grace time.Duration) error {
	select {
	case <-p.done:
		return nil
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		return nil
	case <-time.After(grace):
	}
	_ = p.cmd.Process.Kill()
	select {
	case <-p.done:
		return nil
	case <-time.After(10 * time.Second):
		return fmt.Errorf("%s (pid %d) did not exit after SIGKILL", p.name, p.pid())
	}
}

func tail(path string, lines int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "(no log: " + err.Error() + ")"
	}
	parts := bytes.Split(bytes.TrimRight(b, "\n"), []byte("\n"))
	if len(parts) > lines {
		parts = parts[len(parts)-lines:]
	}
	return string(bytes.Join(parts, []byte("\n")))
}

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
			if match(p) && alive(p.pid) {
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

// alive reports whether pid names a live process (a zombie counts as gone).
func alive(pid int) bool {
	if err := syscall.Kill(pid, 0); err != nil {
		return !errors.Is(err, syscall.ESRCH)
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	if i := bytes.LastIndexByte(stat, ')'); i >= 0 && i+2 < len(stat) {
		return stat[i+2] != 'Z'
	}
	return true
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
