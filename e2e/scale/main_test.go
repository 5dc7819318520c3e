package scale

import (
	"flag"
	"fmt"
	"os"
	"testing"

	"github.com/gpuvc/gpuvc/e2e/localcp"
	"github.com/gpuvc/gpuvc/kind/localcluster"
	"github.com/gpuvc/gpuvc/kind/nodepool"
)

// TestMain starts the control plane only when benchmarks run: the package has
// no tests.
func TestMain(m *testing.M) {
	flag.Parse()
	if f := flag.Lookup("test.bench"); f == nil || f.Value.String() == "" {
		os.Exit(m.Run())
	}
	os.Exit(localcp.RunTests(m, localcluster.Options{Pools: pools()}, nil))
}

// pools: a system node for the vCluster control planes and a100 nodes with
// room for every benchmark pod (kwok runs no container: capacity is a number).
func pools() []nodepool.Pool {
	a100 := nodepool.Pool{Name: "a100", Taint: true}
	for i := range 10 {
		a100.Nodes = append(a100.Nodes, nodepool.Node{
			Name: fmt.Sprintf("a100-%d", i), CPU: "4000", Memory: "64Ti", EphemeralStorage: "64Ti", Pods: 1100,
			GPU: &nodepool.GPUs{Product: nodepool.ProductA100_80GB, Count: 8, MemoryMiB: 81920},
		})
	}
	return []nodepool.Pool{
		{Name: "system", Nodes: []nodepool.Node{{Name: "system-0", CPU: "4000", Memory: "64Ti", EphemeralStorage: "64Ti", Pods: 2000}}},
		a100,
	}
}
