package vcmem

import (
	"os"
	"path/filepath"
	"testing"
)

func TestMemoryCgroup(t *testing.T) {
	in := "12:pids:/gpuvc-node/kubepods/podA/c1\n4:memory:/gpuvc-node/kubepods/burstable/podA/c1\n1:name=systemd:/x\n"
	if got := memoryCgroup(in); got != "/gpuvc-node/kubepods/burstable/podA/c1" {
		t.Errorf("memoryCgroup = %q", got)
	}
	if got := memoryCgroup("0::/user.slice\n"); got != "" {
		t.Errorf("cgroup v2 only: memoryCgroup = %q, want empty", got)
	}
}

func TestStatusRSS(t *testing.T) {
	rss, anon, name := statusRSS("Name:\tkube-apiserver\nUmask:\t0022\nVmRSS:\t  204800 kB\nRssAnon:\t  102400 kB\nThreads:\t9\n")
	if rss != 200<<20 || anon != 100<<20 || name != "kube-apiserver" {
		t.Errorf("statusRSS = %d, %d, %q; want %d, %d, kube-apiserver", rss, anon, name, 200<<20, 100<<20)
	}
	if rss, _, _ := statusRSS("Name:\tkthreadd\n"); rss != 0 {
		t.Errorf("a kernel thread has no VmRSS: got %d", rss)
	}
}

func TestWorkingSet(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("memory.usage_in_bytes", "1000\n")
	write("memory.stat", "cache 300\nrss 700\ntotal_inactive_file 250\n")
	if ws, err := workingSet(dir); err != nil || ws != 750 {
		t.Errorf("workingSet = %d, %v; want 750", ws, err)
	}
	write("memory.stat", "total_inactive_file 2000\n")
	if ws, _ := workingSet(dir); ws != 0 {
		t.Errorf("inactive file above usage: workingSet = %d, want 0", ws)
	}
}

func TestReadPodMemoryOfNoPod(t *testing.T) {
	if _, err := ReadPodMemory("00000000-0000-0000-0000-000000000000"); err == nil {
		t.Error("a pod that does not run here: want an error")
	}
}

func TestStatCPU(t *testing.T) {
	line := "42 (kube controller) S 1 42 42 0 -1 4194560 100 0 0 0 250 75 0 0 20 0 9 0 1000 0 0"
	if got := statCPU(line); got != 325 {
		t.Errorf("statCPU = %d, want 250+75", got)
	}
}
