package vcmem

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// memoryCgroupRoot is where cgroup v1 mounts its memory hierarchy (this machine's
// kind: the real node's kubelet uses the cgroupfs driver under /gpuvc-node).
const memoryCgroupRoot = "/sys/fs/cgroup/memory"

// PodMemory is one pod's memory as the node sees it.
type PodMemory struct {
	// RSS is the sum of VmRSS (resident anonymous + file + shared memory) per
	// process name (/proc/<pid>/comm, at most 15 bytes: "kube-controller").
	RSS map[string]int64
	// Anon is the sum of RssAnon per process name: private memory only, without
	// the mapped binaries whose pages every team running the same image shares.
	Anon map[string]int64
	// CPUTicks is utime+stime of the processes, in clock ticks (1/100 s).
	CPUTicks int64
	// WorkingSet is per container cgroup (its id's first 12 characters) what the
	// kubelet reports as the working set: memory.usage_in_bytes minus
	// total_inactive_file of memory.stat (cgroup v1).
	WorkingSet map[string]int64
}

// TotalRSS is the sum of RSS over the pod's processes.
func (m PodMemory) TotalRSS() int64 { return sum(m.RSS) }

// TotalAnon is the sum of Anon over the pod's processes.
func (m PodMemory) TotalAnon() int64 { return sum(m.Anon) }

// TotalWorkingSet is the sum of the containers' working sets.
func (m PodMemory) TotalWorkingSet() int64 { return sum(m.WorkingSet) }

func sum(m map[string]int64) int64 {
	var n int64
	for _, v := range m {
		n += v
	}
	return n
}

// ReadPodMemory finds the processes of the pod with this UID by their memory
// cgroup (the kubelet names a pod's cgroup pod<uid>, the systemd driver with
// underscores) and reads their RSS and their containers' working sets. No
// process found is an error: the pod does not run on this machine.
func ReadPodMemory(uid string) (PodMemory, error) {
	keys := []string{"pod" + uid, "pod" + strings.ReplaceAll(uid, "-", "_")}
	m := PodMemory{RSS: map[string]int64{}, Anon: map[string]int64{}, WorkingSet: map[string]int64{}}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return m, err
	}
	found := 0
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		dir := filepath.Join("/proc", e.Name())
		cg, err := os.ReadFile(filepath.Join(dir, "cgroup"))
		if err != nil {
			continue // the process ended meanwhile
		}
		path := memoryCgroup(string(cg))
		if !containsAny(path, keys) {
			continue
		}
		status, err := os.ReadFile(filepath.Join(dir, "status"))
		if err != nil {
			continue
		}
		rss, anon, name := statusRSS(string(status))
		m.RSS[name] += rss
		m.Anon[name] += anon
		if stat, err := os.ReadFile(filepath.Join(dir, "stat")); err == nil {
			m.CPUTicks += statCPU(string(stat))
		}
		found++
		container := filepath.Base(path)
		if _, seen := m.WorkingSet[short(container)]; !seen {
			ws, err := workingSet(filepath.Join(memoryCgroupRoot, path))
			if err != nil {
				return m, err
			}
			m.WorkingSet[short(container)] = ws
		}
	}
	if found == 0 {
		return m, fmt.Errorf("no process of pod %s on this machine (looked for a memory cgroup containing %q)", uid, keys[0])
	}
	return m, nil
}

// memoryCgroup is the memory hierarchy's path in a /proc/<pid>/cgroup file
// ("4:memory:/gpuvc-node/kubepods/burstable/pod<uid>/<container>"), or "".
func memoryCgroup(procCgroup string) string {
	for _, line := range strings.Split(procCgroup, "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		for _, c := range strings.Split(parts[1], ",") {
			if c == "memory" {
				return parts[2]
			}
		}
	}
	return ""
}

// statusRSS reads VmRSS and RssAnon (in bytes) and Name from a
// /proc/<pid>/status file. Kernel threads have neither: 0.
func statusRSS(status string) (rss, anon int64, name string) {
	sc := bufio.NewScanner(strings.NewReader(status))
	for sc.Scan() {
		key, value, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		value = strings.TrimSpace(value)
		switch key {
		case "Name":
			name = value
		case "VmRSS":
			rss = kiB(value)
		case "RssAnon":
			anon = kiB(value)
		}
	}
	return rss, anon, name
}

func kiB(value string) int64 {
	kb, _ := strconv.ParseInt(strings.TrimSuffix(value, " kB"), 10, 64)
	return kb * 1024
}

// statCPU is utime+stime (fields 14 and 15) of a /proc/<pid>/stat line; the
// command name (field 2) may hold spaces, so fields are counted after its ')'.
func statCPU(stat string) int64 {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(stat[i+1:]) // f[0] is field 3 (state)
	if len(f) < 13 {
		return 0
	}
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return utime + stime
}

// workingSet is usage_in_bytes − total_inactive_file of a v1 memory cgroup.
func workingSet(dir string) (int64, error) {
	b, err := os.ReadFile(filepath.Join(dir, "memory.usage_in_bytes"))
	if err != nil {
		return 0, err
	}
	usage, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s/memory.usage_in_bytes: %w", dir, err)
	}
	stat, err := os.ReadFile(filepath.Join(dir, "memory.stat"))
	if err != nil {
		return 0, err
	}
	inactive := statField(string(stat), "total_inactive_file")
	if inactive > usage {
		return 0, nil
	}
	return usage - inactive, nil
}

// statField is one field of a memory.stat file, 0 when absent.
func statField(stat, field string) int64 {
	for _, line := range strings.Split(stat, "\n") {
		k, v, ok := strings.Cut(line, " ")
		if ok && k == field {
			n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return n
		}
	}
	return 0
}

func containsAny(s string, subs []string) bool {
	for _, sub := range subs {
		if s != "" && strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

func short(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}
