package scale

import (
	"context"
	"flag"
	"fmt"
	"os"
	"testing"

	"github.com/gpuvc/gpuvc/e2e/localcp"
	"github.com/gpuvc/gpuvc/kind/localcluster"
	"github.com/gpuvc/gpuvc/kind/localkueue"
	"github.com/gpuvc/gpuvc/kind/nodepool"
)

// kueue runs beside the control plane: half the scale benchmark's teams queue
// their GPU pods in it.
var kueue *localkueue.Kueue

// TestMain starts the control plane (and Kueue) only when benchmarks run: the
// package has no tests. Kueue starts before any manager: the manager watches
// Kueue's kinds only if they exist when it starts.
func TestMain(m *testing.M) {
	flag.Parse()
	if f := flag.Lookup("test.bench"); f == nil || f.Value.String() == "" {
		os.Exit(m.Run())
	}
	sz, _ := sizeOf(os.Getenv("BENCH_SCALE")) // an unknown scale fails the benchmark itself
	os.Exit(localcp.RunTests(m, localcluster.Options{Pools: pools(sz.nodes)}, func(ctx context.Context, cp *localcluster.ControlPlane) (func(), error) {
		k, err := localcp.StartKueue(ctx, cp, os.Stderr)
		if err != nil {
			return nil, err
		}
		kueue = k
		return func() { _ = k.Stop() }, nil
	}))
}

// GPUs of one a100 node: kwok runs no container, so capacity is a number, and
// a few large nodes hold the benchmark's pods with fewer node heartbeats than
// many real-sized ones. Most GPUs are whole, the rest in MIG mode as seven
// 1g.10gb slices each.
const (
	nodeGPUs    = 160
	nodeMIGGPUs = 32
)

// pools: a system node for the vCluster control planes and n a100 nodes with
// room for every benchmark pod that may run.
func pools(n int) []nodepool.Pool {
	a100 := nodepool.Pool{Name: "a100", Taint: true}
	for i := range max(n, 1) {
		a100.Nodes = append(a100.Nodes, nodepool.Node{
			Name: fmt.Sprintf("a100-%d", i), CPU: "4000", Memory: "64Ti", EphemeralStorage: "64Ti", Pods: 1100,
			GPU: &nodepool.GPUs{Product: nodepool.ProductA100_80GB, Count: nodeGPUs, MemoryMiB: 81920,
				MIG: map[string]int{migProfile: 7 * nodeMIGGPUs}, MIGGPUs: nodeMIGGPUs},
		})
	}
	return []nodepool.Pool{
		{Name: "system", Nodes: []nodepool.Node{{Name: "system-0", CPU: "4000", Memory: "64Ti", EphemeralStorage: "64Ti", Pods: 2000}}},
		a100,
	}
}
