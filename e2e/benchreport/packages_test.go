package main

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// make bench runs only packages that declare benchmarks: the end-to-end suite
// (whose TestMain starts a backend) is not among them.
func TestBenchmarkPackagesLeaveOutPackagesWithoutBenchmarks(t *testing.T) {
	root, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		t.Skip("not in a git work tree:", err)
	}
	pkgs, err := benchmarkPackages(strings.TrimSpace(string(root)), "./e2e/...", "./gpu/...")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{pkgBench, pkgScale, pkgMIG, pkgGPU} {
		if !slices.Contains(pkgs, want) {
			t.Errorf("%s declares benchmarks but is not listed: %v", want, pkgs)
		}
	}
	for _, not := range []string{"github.com/gpuvc/gpuvc/e2e/suite", "github.com/gpuvc/gpuvc/e2e/trial", "github.com/gpuvc/gpuvc/gpu/inventory"} {
		if slices.Contains(pkgs, not) {
			t.Errorf("%s has no benchmark but is listed", not)
		}
	}
}

func TestIsBenchmarkName(t *testing.T) {
	for name, want := range map[string]bool{"Benchmark": true, "BenchmarkX": true, "Benchmark_x": true, "Benchmarks": false, "benchmarkX": false, "TestX": false} {
		if got := isBenchmarkName(name); got != want {
			t.Errorf("isBenchmarkName(%q) = %v, want %v", name, got, want)
		}
	}
}
