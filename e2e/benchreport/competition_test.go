package main

import (
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

func TestParseStat(t *testing.T) {
	// The command holds spaces and a parenthesis; ppid 77, utime 150, stime 50,
	// cutime 20, cstime 30 ticks.
	line := "4242 (kube apiserver (x)) S 77 4242 4242 0 -1 4194560 100 0 0 0 150 50 20 30 20 0 12 0 100 0 0\n"
	p, ok := parseStat([]byte(line))
	if !ok || p.ppid != 77 || p.cpu != 2.5 {
		t.Errorf("parseStat = %+v, %v; want ppid 77, 2.5 CPU seconds", p, ok)
	}
	if _, ok := parseStat([]byte("1 (init")); ok {
		t.Error("a truncated line parsed")
	}
}

func TestCompetitionAddWeighsByDuration(t *testing.T) {
	a := Competition{Cores: 1, Max: 1.5, Took: time.Minute, Samples: 12, Load: LoadStats{Min: 1, Max: 3, Mean: 2, Samples: 12}}
	b := Competition{Cores: 0.1, Max: 0.2, Took: 3 * time.Minute, Samples: 36, Load: LoadStats{Min: 0.5, Max: 2, Mean: 1, Samples: 36}}
	got := Competition{}.add(a).add(b)
	if want := (1*60 + 0.1*180) / 240; got.Cores < want-1e-9 || got.Cores > want+1e-9 || got.Max != 1.5 || got.Took != 4*time.Minute {
		t.Errorf("add = %+v, want %.3f cores, max 1.5 over 4m", got, want)
	}
	if got.Load.Min != 0.5 || got.Load.Max != 3 || got.Load.Mean != 1.25 {
		t.Errorf("load %+v, want 0.5–3, mean 1.25", got.Load)
	}
	if !a.competed() || b.competed() {
		t.Error("competed: want a (1 core) yes, b (0.1) no")
	}
}

// TestCompetitionSamplerCountsItsTreeAsOurs: CPU burnt by the benchmark's own
// process tree is not competition. Another process's may be (the machine is
// shared): only a bound that holds whatever else runs is checked.
func TestCompetitionSamplerCountsItsTreeAsOurs(t *testing.T) {
	if testing.Short() {
		t.Skip("burns a core for 2 s")
	}
	cmd := exec.Command(os.Args[0], "-test.run", "^TestHelperBurn$")
	cmd.Env = append(os.Environ(), "BENCHREPORT_BURN=2s")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := startCompetitionSampler(cmd.Process.Pid, 500*time.Millisecond)
	before, err := s.sample()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	after, err := s.sample()
	if err != nil {
		t.Fatal(err)
	}
	c := s.stop()
	// The child, reaped, is counted through this process's cutime: its CPU is ours.
	child := (cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()).Seconds()
	if got := after.ours - before.ours; got < 0.9*child-0.05 {
		t.Errorf("the tree's CPU grew by %.2f s while the child used %.2f s: the child was not counted as ours", got, child)
	}
	if c.Samples == 0 || c.Took == 0 {
		t.Fatalf("no samples: %+v", c)
	}
	busy, _ := busySeconds()
	if c.Cores < 0 || busy <= 0 {
		t.Errorf("competition %+v, machine busy %.0f s", c, busy)
	}
	if !strings.Contains(c.String(), "cores busy") {
		t.Errorf("String() = %q", c.String())
	}
	t.Logf("while a child burnt a core for 2 s: %s", c)
}

// TestHelperBurn is the child of TestCompetitionSamplerCountsItsTreeAsOurs.
func TestHelperBurn(t *testing.T) {
	d, err := time.ParseDuration(os.Getenv("BENCHREPORT_BURN"))
	if err != nil {
		t.Skip("a helper process")
	}
	for end := time.Now().Add(d); time.Now().Before(end); {
	}
}
