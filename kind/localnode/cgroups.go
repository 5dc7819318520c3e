package localnode

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/gpuvc/gpuvc/kind/supervise"
)

// cgroupRoot is the kubelet's cgroup root: every pod cgroup of the node lies under
// it in each hierarchy, so teardown finds every container process there.
const cgroupRoot = "/gpuvc-node"

// cgroupMounts returns the mount point of every cgroup hierarchy (v1 and v2).
func cgroupMounts() ([]string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		_, after, ok := strings.Cut(line, " - ")
		if !ok {
			continue
		}
		fstype, _, _ := strings.Cut(after, " ")
		if fstype != "cgroup" && fstype != "cgroup2" {
			continue
		}
		fields := strings.Fields(line)
		out = append(out, unescapeMountPath(fields[4]))
	}
	return slices.Compact(out), sc.Err()
}

// createCgroupRoot creates the root in every hierarchy: the kubelet refuses a
// cgroup root that does not exist. A new cpuset cgroup starts without CPUs or
// memory nodes; it gets its parent's.
func createCgroupRoot() error {
	mounts, err := cgroupMounts()
	if err != nil {
		return err
	}
	for _, m := range mounts {
		dir := filepath.Join(m, cgroupRoot)
		if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("creating cgroup %s: %w", dir, err)
		}
		for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
			own := filepath.Join(dir, f)
			if b, err := os.ReadFile(own); err != nil || strings.TrimSpace(string(b)) != "" {
				continue
			}
			parent, err := os.ReadFile(filepath.Join(m, f))
			if err != nil {
				continue
			}
			if err := os.WriteFile(own, parent, 0o644); err != nil {
				return fmt.Errorf("setting %s: %w", own, err)
			}
		}
	}
	return nil
}

// cgroupDirs returns every cgroup under the root in every hierarchy, deepest first.
func cgroupDirs() ([]string, error) {
	mounts, err := cgroupMounts()
	if err != nil {
		return nil, err
	}
	var dirs []string
	for _, m := range mounts {
		_ = filepath.WalkDir(filepath.Join(m, cgroupRoot), func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, p)
			}
			return nil
		})
	}
	slices.SortStableFunc(dirs, func(a, b string) int { return strings.Count(b, "/") - strings.Count(a, "/") })
	return dirs, nil
}

// cgroupPIDs returns the processes in any cgroup under the root.
func cgroupPIDs() ([]int, error) {
	dirs, err := cgroupDirs()
	if err != nil {
		return nil, err
	}
	var pids []int
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join(d, "cgroup.procs"))
		if err != nil {
			continue
		}
		for _, f := range strings.Fields(string(b)) {
			if pid, err := strconv.Atoi(f); err == nil && !slices.Contains(pids, pid) {
				pids = append(pids, pid)
			}
		}
	}
	return pids, nil
}

// killCgroupProcs kills every process under the root: with the v1 freezer the
// tree is frozen first so nothing forks away between listing and killing.
func killCgroupProcs(timeout time.Duration) error {
	mounts, err := cgroupMounts()
	if err != nil {
		return err
	}
	var freezer string
	for _, m := range mounts {
		if _, err := os.Stat(filepath.Join(m, cgroupRoot, "freezer.state")); err == nil {
			freezer = filepath.Join(m, cgroupRoot, "freezer.state")
		}
	}
	if freezer != "" {
		if err := os.WriteFile(freezer, []byte("FROZEN"), 0o644); err == nil {
			waitFrozen(freezer, 2*time.Second)
			defer os.WriteFile(freezer, []byte("THAWED"), 0o644) //nolint:errcheck // best effort; killed tasks die on thaw
		}
	}
	deadline := time.Now().Add(timeout)
	for {
		pids, err := cgroupPIDs()
		if err != nil {
			return err
		}
		var living []int
		for _, pid := range pids {
			if supervise.Alive(pid) {
				living = append(living, pid)
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		if len(living) == 0 {
			return nil
		}
		if freezer != "" {
			// SIGKILL takes effect once the tasks run again.
			_ = os.WriteFile(freezer, []byte("THAWED"), 0o644)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("processes in cgroup %s survive SIGKILL: %v", cgroupRoot, living)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func waitFrozen(stateFile string, d time.Duration) {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if b, err := os.ReadFile(stateFile); err == nil && strings.TrimSpace(string(b)) == "FROZEN" {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// removeCgroups removes every cgroup under the root and the root itself, deepest
// first; a cgroup lingers briefly after its last process died, so removal is
// retried until the timeout.
func removeCgroups(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		dirs, err := cgroupDirs()
		if err != nil {
			return err
		}
		var errs []error
		for _, d := range dirs {
			if err := syscall.Rmdir(d); err != nil && !errors.Is(err, syscall.ENOENT) {
				errs = append(errs, fmt.Errorf("removing cgroup %s: %w", d, err))
			}
		}
		if len(errs) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return errors.Join(errs...)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
