package faults_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strconv"
	"testing"

	"github.com/gpuvc/gpuvc/charts"
	"github.com/gpuvc/gpuvc/e2e/localcp"
	"github.com/gpuvc/gpuvc/e2e/testsupport/gpuvcbin"
	"github.com/gpuvc/gpuvc/kind/localcluster"
	"github.com/gpuvc/gpuvc/kind/nodepool"
	"github.com/gpuvc/gpuvc/manager/teamctl"
	"github.com/gpuvc/gpuvc/vclusters/vclusterstest"
)

var env struct {
	cp       *localcluster.ControlPlane
	teams    *teamctl.Client
	bin      string // the gpuvc binary under test
	chartDir string // the vCluster chart of the module cache
	mgr      *manager
	size     size
}

// size is how much fault the run injects: the default fits `make test`;
// GPUVC_FAULTS=full is the run docs/benchmarks.md reports.
type size struct {
	pods      int        // fractional pods created over the churn
	teams     int        // teams the pods churn across
	together  int        // teams created and deleted concurrently
	seed      int64      // of every random choice (GPUVC_FAULTS_SEED)
	killEvery [2]float64 // seconds the manager lives between kills
	// teamKillEvery is killEvery while teams are created together. With 50
	// teams and kills every 1.5–5 s, 3 teams still had no status after 8 min:
	// a manager life, less its start-up, was shorter than their reconcile (host
	// objects, then a Helm install that takes seconds on a loaded machine,
	// before the status is written) on the reconciler's one worker. No
	// controller progresses when it crash-loops that fast.
	teamKillEvery [2]float64
}

func sizeFromEnv() size {
	s := size{pods: 150, teams: 5, together: 10, seed: 17, killEvery: [2]float64{1.5, 5}, teamKillEvery: [2]float64{1.5, 5}}
	if os.Getenv("GPUVC_FAULTS") == "full" {
		s.pods, s.together, s.teamKillEvery = 1000, 50, [2]float64{5, 15}
	}
	if v, err := strconv.ParseInt(os.Getenv("GPUVC_FAULTS_SEED"), 10, 64); err == nil {
		s.seed = v
	}
	return s
}

// pools: 16 whole A100s for 5 teams of quota 3, and a system node for the
// vCluster control planes.
func pools() []nodepool.Pool {
	gpu := func(name string) nodepool.Node {
		return nodepool.Node{Name: name, CPU: "128", Memory: "1Ti", EphemeralStorage: "2Ti", Pods: 110,
			GPU: &nodepool.GPUs{Product: nodepool.ProductA100_80GB, Count: 8, MemoryMiB: 81920}}
	}
	return []nodepool.Pool{
		{Name: "system", Nodes: []nodepool.Node{{Name: "system-0", CPU: "256", Memory: "1Ti", EphemeralStorage: "2Ti", Pods: 250}}},
		{Name: "a100", Taint: true, Nodes: []nodepool.Node{gpu("a100-0"), gpu("a100-1")}},
	}
}

// TestMain starts the control plane, the gpuvc binary and its manager only
// when a test will run (`make bench` runs no test here).
func TestMain(m *testing.M) {
	env.size = sizeFromEnv()
	flag.Parse()
	if f := flag.Lookup("test.run"); f != nil && f.Value.String() == "^$" {
		os.Exit(m.Run())
	}
	os.Exit(localcp.RunTests(m, localcluster.Options{Pools: pools()}, setUp))
}

func setUp(ctx context.Context, cp *localcluster.ControlPlane) (func(), error) {
	env.cp = cp
	if err := charts.InstallCRDs(ctx, cp.Config); err != nil {
		return nil, err
	}
	var err error
	if env.chartDir, err = vclusterstest.ChartDir(ctx); err != nil {
		return nil, err
	}
	if env.bin, err = gpuvcbin.Build(ctx, cp.Dir); err != nil {
		return nil, err
	}
	if env.teams, err = teamctl.New(cp.Config); err != nil {
		return nil, err
	}
	if env.mgr, err = startManager(ctx); err != nil {
		return nil, err
	}
	return func() {
		if err := env.mgr.stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stopping the manager:", err)
		}
	}, nil
}
