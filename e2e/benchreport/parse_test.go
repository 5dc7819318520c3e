package main

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParse(t *testing.T) {
	out := `goos: linux
goarch: amd64
pkg: github.com/gpuvc/gpuvc/gpu/share
cpu: Some CPU
BenchmarkStaticPacking/small-2         	     100	  12345 ns/op	    1.006 gpus/lowerbound	     0 B/op	       0 allocs/op
BenchmarkManagerBurst-2   	bench: manager running
    manager_test.go:30: burst 0: 34 pods created
       1	2000000000 ns/op	        25.6 pods/s	         7.000 reservations
PASS
ok  	github.com/gpuvc/gpuvc/gpu/share	3.1s
pkg: github.com/gpuvc/gpuvc/e2e/scale
BenchmarkScale
BenchmarkScale-2
    scale_test.go:1: log line
       1	5.0e+09 ns/op	 1.5 cold-start-s
`
	got := Parse(strings.NewReader(out))
	want := []Result{
		{Pkg: "github.com/gpuvc/gpuvc/gpu/share", Name: "BenchmarkStaticPacking/small", N: 100,
			Metrics: map[string]float64{"ns/op": 12345, "gpus/lowerbound": 1.006, "B/op": 0, "allocs/op": 0},
			Units:   []string{"ns/op", "gpus/lowerbound", "B/op", "allocs/op"}},
		{Pkg: "github.com/gpuvc/gpuvc/e2e/scale", Name: "BenchmarkScale", N: 1,
			Metrics: map[string]float64{"ns/op": 5e9, "cold-start-s": 1.5},
			Units:   []string{"ns/op", "cold-start-s"}},
	}
	// The burst's name shares its line with a log line: its result is lost,
	// which the report shows as a missing figure rather than a wrong one.
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Parse (-want +got):\n%s", diff)
	}
}
