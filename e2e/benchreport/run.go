package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"
)

// Run is one `make bench`: what ran, how long, on how loaded a machine.
type Run struct {
	Started, Ended time.Time
	Scale          string
	Commands       []string // one go test command line per package
	Failed         []string // packages whose go test failed
	Results        []Result
	Load           LoadStats
	// Competition is, per package, what other processes took of the machine
	// while its benchmarks ran.
	Competition map[string]Competition
}

// runPackages runs each package's benchmarks in turn, output streamed to w,
// and parses the results. A failing package is recorded and the others still
// run: one broken benchmark must not cost the whole report.
func runPackages(ctx context.Context, dir string, pkgs []string, opts runOptions, w io.Writer) *Run {
	run := &Run{Started: time.Now(), Scale: opts.scale, Competition: map[string]Competition{}}
	sampler := startLoadSampler(5 * time.Second)
	for _, pkg := range pkgs {
		args := []string{"test", "-run", "^$", "-bench", opts.bench, "-benchmem", "-timeout", opts.timeout}
		if opts.benchtime != "" {
			args = append(args, "-benchtime", opts.benchtime)
		}
		args = append(args, pkg)
		run.Commands = append(run.Commands, "go "+strings.Join(quoteArgs(args), " "))
		fmt.Fprintf(w, "\n=== bench %s\n", pkg)
		cmd := exec.CommandContext(ctx, "go", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "BENCH_SCALE="+opts.scale)
		var out strings.Builder
		tee := io.MultiWriter(w, &out)
		cmd.Stdout, cmd.Stderr = tee, tee
		err := cmd.Start()
		if err == nil {
			others := startCompetitionSampler(cmd.Process.Pid, competitionEvery)
			err = cmd.Wait()
			c := others.stop()
			run.Competition[pkg] = c
			fmt.Fprintf(w, "bench: while %s ran, %s\n", pkg, c)
		}
		if err != nil {
			fmt.Fprintf(w, "bench: %s failed: %v\n", pkg, err)
			run.Failed = append(run.Failed, pkg)
		}
		for _, r := range Parse(strings.NewReader(out.String())) {
			if r.Pkg == "" {
				r.Pkg = pkg
			}
			run.Results = append(run.Results, r)
		}
	}
	run.Load = sampler.stop()
	run.Ended = time.Now()
	return run
}

type runOptions struct {
	scale, bench, benchtime, timeout string
}

func quoteArgs(args []string) []string {
	q := make([]string, len(args))
	for i, a := range args {
		if a == "" || strings.ContainsAny(a, "^$*|() ") {
			a = "'" + a + "'"
		}
		q[i] = a
	}
	return q
}

// LoadStats summarise /proc/loadavg's 1-minute figure over the run.
type LoadStats struct {
	Min, Mean, Max float64
	Samples        int
}

type loadSampler struct {
	mu   sync.Mutex
	vals []float64
	done chan struct{}
	wg   sync.WaitGroup
}

func startLoadSampler(every time.Duration) *loadSampler {
	s := &loadSampler{done: make(chan struct{})}
	s.wg.Go(func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			if v, err := loadAverage(); err == nil {
				s.mu.Lock()
				s.vals = append(s.vals, v)
				s.mu.Unlock()
			}
			select {
			case <-s.done:
				return
			case <-t.C:
			}
		}
	})
	return s
}

func (s *loadSampler) stop() LoadStats {
	close(s.done)
	s.wg.Wait()
	var st LoadStats
	for i, v := range s.vals {
		if i == 0 || v < st.Min {
			st.Min = v
		}
		st.Max = max(st.Max, v)
		st.Mean += v
	}
	if st.Samples = len(s.vals); st.Samples > 0 {
		st.Mean /= float64(st.Samples)
	}
	return st
}

func loadAverage() (float64, error) {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0, err
	}
	var one float64
	_, err = fmt.Sscan(string(b), &one)
	return one, err
}
