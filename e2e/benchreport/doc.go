// Command benchreport is what `make bench` runs: it finds the packages that
// declare benchmarks, runs each with `go test -run '^$' -bench .` one at a
// time (so no test suite starts its backend, and no two control planes share
// the machine), samples the load average meanwhile, and writes the figures
// with their baselines into docs/benchmarks.md between the markers
// <!-- bench:begin --> and <!-- bench:end -->; text outside them is kept.
//
//	go run ./e2e/benchreport [-scale small|full] [-out docs/benchmarks.md] [-bench regexp] [-pkg ./gpu/...]
//
// A test-only tool: the gpuvc binary links nothing of it.
package main
