package main

import (
	"fmt"
	"math"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"
)

// markers returns the begin and end markers of a section: "bench" for the
// default scale, "bench-full" for BENCH_SCALE=full, so each scale's last run
// keeps its own place in the document.
func markers(name string) (begin, end string) {
	return "<!-- " + name + ":begin -->", "<!-- " + name + ":end -->"
}

// sectionName is the marker name of a scale's figures.
func sectionName(scale string) string {
	if scale == "small" {
		return "bench"
	}
	return "bench-" + scale
}

// Machine is what the report says of the computer.
type Machine struct {
	Cores     int
	CPU       string
	MemoryGiB float64
	Kernel    string
	Go        string
	Commit    string
}

// Splice puts generated between the named markers of doc, keeping the rest; a
// document without them gets them appended.
func Splice(doc, name, generated string) (string, error) {
	beginMarker, endMarker := markers(name)
	i, j := strings.Index(doc, beginMarker), strings.Index(doc, endMarker)
	switch {
	case i < 0 && j < 0:
		if doc != "" && !strings.HasSuffix(doc, "\n") {
			doc += "\n"
		}
		return doc + beginMarker + "\n" + generated + endMarker + "\n", nil
	case i < 0 || j < i:
		return "", fmt.Errorf("markers %s … %s missing or out of order: fix the file by hand", beginMarker, endMarker)
	}
	return doc[:i+len(beginMarker)] + "\n" + generated + doc[j:], nil
}

// sectionCompetition is the competition over the runs of the packages whose
// results the section shows (short names, in order of the figures).
func sectionCompetition(run *Run, s section) (Competition, []string) {
	var c Competition
	var pkgs []string
	for _, f := range s.Figures {
		if _, ok := lookup(run.Results, f.Ref); !ok {
			continue
		}
		short := "`" + strings.TrimPrefix(f.Ref.Pkg, "github.com/gpuvc/gpuvc/") + "`"
		if slices.Contains(pkgs, short) {
			continue
		}
		if pc, ok := run.Competition[f.Ref.Pkg]; ok {
			c = c.add(pc)
			pkgs = append(pkgs, short)
		}
	}
	return c, pkgs
}

// Render writes the generated part of docs/benchmarks.md.
func Render(run *Run, m Machine) string {
	var b strings.Builder
	p := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	p("<!-- Written by `make bench` (go run ./e2e/benchreport); edits between the markers are overwritten. -->\n\n")
	if run.Scale == "small" {
		p("## Figures of the last `make bench`\n\n")
	} else {
		p("## Figures of the last run at `BENCH_SCALE=%s`\n\n", run.Scale)
	}
	p("| | |\n|---|---|\n")
	p("| run | %s, %s |\n", run.Started.UTC().Format("2006-01-02 15:04 MST"), run.Ended.Sub(run.Started).Round(time.Second))
	p("| commit | `%s` |\n", m.Commit)
	p("| scale | `BENCH_SCALE=%s` |\n", run.Scale)
	p("| machine | %d cores (%s), %.1f GiB memory, %s, %s |\n", m.Cores, m.CPU, m.MemoryGiB, m.Kernel, m.Go)
	p("| load average (1 min) during the run | min %.1f, mean %.1f, max %.1f (%d samples, every 5 s); above %d means other processes competed for the cores |\n",
		run.Load.Min, run.Load.Mean, run.Load.Max, run.Load.Samples, m.Cores)
	failed := "none"
	if len(run.Failed) > 0 {
		failed = "`" + strings.Join(run.Failed, "`, `") + "` (their figures are missing or partial)"
	}
	p("| packages that failed | %s |\n", failed)
	var others Competition
	competed := 0
	for _, c := range run.Competition {
		others = others.add(c)
		if c.competed() {
			competed++
		}
	}
	if len(run.Competition) > 0 {
		p("| other processes during the run (the machine's busy CPU less the benchmarks' own process trees, every %s) | %.2f cores on average, at most %.2f; %d of %d packages ran beside other work (≥ 0.25 cores) |\n",
			competitionEvery, others.Cores, others.Max, competed, len(run.Competition))
	}
	p("\n")
	p("Ratio = value / baseline, both from this run. A missing value (—) is a benchmark that failed or was not run; " +
		"a section none of whose benchmarks ran is left out.\n\n")
	for _, s := range sections {
		if !slices.ContainsFunc(s.Figures, func(f figure) bool { _, ok := lookup(run.Results, f.Ref); return ok }) {
			continue
		}
		p("### %s\n\n%s\n\n", s.Title, s.Note)
		if c, pkgs := sectionCompetition(run, s); len(pkgs) > 0 {
			if c.competed() {
				p("**Other work competed while these were measured** (%s): %s. Latencies and rates are pessimistic; ratios of figures measured side by side less so.\n\n",
					strings.Join(pkgs, ", "), c)
			} else {
				p("Measured alone (%s): %s.\n\n", strings.Join(pkgs, ", "), c)
			}
		}
		p("| figure | value | baseline | ratio |\n|---|---:|---|---:|\n")
		for _, f := range s.Figures {
			v, ok := lookup(run.Results, f.Ref)
			val := "—"
			if ok {
				val = strings.TrimSpace(format(v) + " " + f.Unit)
			}
			baseline, ratio := "", ""
			switch {
			case f.Versus.Base != nil:
				bv, bok := lookup(run.Results, *f.Versus.Base)
				baseline = f.Versus.What + ": —"
				if bok {
					baseline = fmt.Sprintf("%s: %s", f.Versus.What, format(bv))
				}
				if ok && bok && bv != 0 {
					ratio = format(v/bv) + "×"
				}
			case f.Versus.Self != "":
				baseline = f.Versus.Self + " (the value is the ratio)"
				if ok {
					ratio = format(v) + "×"
				}
			}
			p("| %s | %s | %s | %s |\n", f.What, val, baseline, ratio)
		}
		p("\n")
	}
	p("### Every benchmark of the run\n\n| package | benchmark | iterations | metrics |\n|---|---|---:|---|\n")
	for _, res := range run.Results {
		var ms []string
		for _, u := range res.Units {
			ms = append(ms, format(res.Metrics[u])+" "+u)
		}
		p("| `%s` | `%s` | %d | %s |\n", strings.TrimPrefix(res.Pkg, "github.com/gpuvc/gpuvc/"), res.Name, res.N, strings.Join(ms, ", "))
	}
	p("\n### Commands\n\n`make bench` ran, one package after another:\n\n```\n%s\n```\n\n", strings.Join(run.Commands, "\n"))
	return b.String()
}

func lookup(results []Result, r ref) (float64, bool) {
	i := slices.IndexFunc(results, func(res Result) bool { return res.Pkg == r.Pkg && res.Name == r.Bench })
	if i < 0 {
		return 0, false
	}
	v, ok := results[i].Metrics[r.Metric]
	return v, ok
}

// format prints about three significant digits, no exponent for everyday sizes.
func format(v float64) string {
	a := math.Abs(v)
	switch {
	case a == 0:
		return "0"
	case a >= 1e7 || a < 1e-3:
		return strconv.FormatFloat(v, 'g', 3, 64)
	case a >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case a >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	case a >= 1:
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
	return strconv.FormatFloat(v, 'f', 3, 64)
}

// describeMachine reads /proc for the cores, CPU model and memory.
func describeMachine(commit string) Machine {
	m := Machine{Cores: runtime.NumCPU(), Go: runtime.Version(), Commit: commit, CPU: "unknown CPU", Kernel: runtime.GOOS}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for line := range strings.Lines(string(b)) {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPU = strings.TrimSpace(v)
				break
			}
		}
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		var kib float64
		for line := range strings.Lines(string(b)) {
			if _, err := fmt.Sscanf(line, "MemTotal: %f kB", &kib); err == nil {
				m.MemoryGiB = kib / (1 << 20)
				break
			}
		}
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = "Linux " + strings.TrimSpace(string(b))
	}
	return m
}
