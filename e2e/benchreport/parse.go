package main

import (
	"bufio"
	"io"
	"regexp"
	"strconv"
	"strings"
)

// Result is one benchmark's line of `go test -bench` output.
type Result struct {
	Pkg  string // import path, from the "pkg:" header
	Name string // e.g. BenchmarkStaticPacking/small, without the -GOMAXPROCS suffix
	N    int    // iterations
	// Metrics maps a unit (ns/op, p50-ms, pods/s...) to its value; Units keeps
	// their order on the line.
	Metrics map[string]float64
	Units   []string
}

var (
	procsSuffix = regexp.MustCompile(`-\d+$`)
	// A result: name, iterations, then value-unit pairs. go test prints the
	// name when a benchmark starts and the rest when it ends, so log lines may
	// come in between: the name alone on a line is remembered.
	nameOnly = regexp.MustCompile(`^(Benchmark\S*)\s*$`)
	resultRe = regexp.MustCompile(`^(Benchmark\S*)?\s*(\d+)((?:\s+[-+0-9.eE]+ \S+)+)\s*$`)
)

// Parse reads go test output and returns its benchmark results in order.
func Parse(r io.Reader) []Result {
	var out []Result
	pkg, pending := "", ""
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if p, ok := strings.CutPrefix(line, "pkg: "); ok {
			pkg = strings.TrimSpace(p)
			continue
		}
		if m := nameOnly.FindStringSubmatch(line); m != nil {
			pending = m[1]
			continue
		}
		m := resultRe.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		name := m[1]
		if name == "" {
			if name = pending; name == "" {
				continue
			}
		}
		pending = ""
		n, _ := strconv.Atoi(m[2])
		res := Result{Pkg: pkg, Name: procsSuffix.ReplaceAllString(name, ""), N: n, Metrics: map[string]float64{}}
		f := strings.Fields(m[3])
		for i := 0; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				continue
			}
			res.Metrics[f[i+1]] = v
			res.Units = append(res.Units, f[i+1])
		}
		out = append(out, res)
	}
	return out
}
