package trial

import (
	"testing"

	"github.com/gpuvc/gpuvc/charts/installer"
	"github.com/gpuvc/gpuvc/gpu/inventory"
	"github.com/gpuvc/gpuvc/kind/localstack"
)

func TestLocalValuesPassTheChartSchema(t *testing.T) {
	if err := installer.Check(localstack.Values()); err != nil {
		t.Fatalf("the chart refuses the Docker-less trial's values: %v", err)
	}
	for path, want := range map[string]any{
		"image.pullPolicy":               "Never",
		"vcluster.chart.dir":             "/charts/vcluster",
		"manager.teamServerURL":          "https://{{.ServiceIP}}",
		"agent.enabled":                  false,
		"certManager.enabled":            false,
		"vcluster.ephemeral":             true,
		"vcluster.dra":                   true,
		"manager.replicas":               1,
		"manager.leaderElection.enabled": false,
	} {
		if got := lookup(t, localstack.Values(), path); got != want {
			t.Errorf("%s = %v, want %v", path, got, want)
		}
	}
}

// The local demo teams run in the real node's pool, and the node has the GPUs
// they need at once: a whole GPU and one reserved for fractions per team, and
// vision's MIG quota.
func TestLocalDemoTeamsFitTheRealNode(t *testing.T) {
	inv, err := inventory.Simulate(LocalGPUs)
	if err != nil {
		t.Fatal(err)
	}
	capacity, err := inventory.Capacity(inv, inventory.StrategyMixed)
	if err != nil {
		t.Fatal(err)
	}
	var gpus int64
	mig := map[string]int64{}
	for _, d := range LocalDemoTeams("") {
		if d.Team.Spec.Pool != localstack.RealPool {
			t.Errorf("team %s is in pool %s, not the real node's %s", d.Team.Name, d.Team.Spec.Pool, localstack.RealPool)
		}
		gpus += int64(*d.Team.Spec.Quota.GPUs)
		for p, n := range d.Team.Spec.Quota.MIG {
			mig["nvidia.com/mig-"+p] += int64(n)
		}
	}
	if capacity["nvidia.com/gpu"] < gpus {
		t.Errorf("the real node has %d whole GPUs, the teams' quotas add up to %d", capacity["nvidia.com/gpu"], gpus)
	}
	for res, n := range mig {
		if capacity[res] < n {
			t.Errorf("the real node has %d %s, the teams' quotas add up to %d", capacity[res], res, n)
		}
	}
}
