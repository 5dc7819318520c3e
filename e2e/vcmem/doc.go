// Package vcmem measures, on the real node of kind/localstack (what `gpuvc dev
// cluster up` runs as root), how much memory each team's vCluster control plane
// takes, with gpuvc's default values and with trimmed ones (trim.go), by reading
// the node's processes and cgroups (nodemem.go). Test support only: its one
// benchmark, BenchmarkVClusterMemory, runs under `make bench` and skips when the
// machine's real-node slot is busy or the benchmark is not root.
package vcmem
