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
// vision's MIG quota, from the device plugin; the DRA team's quota from the
// whole GPUs the DRA driver serves.
func TestLocalDemoTeamsFitTheRealNode(t *testing.T) {
	inv, err := inventory.Simulate(LocalGPUs)
	if err != nil {
		t.Fatal(err)
	}
	capacity, err := inventory.Capacity(inv, inventory.StrategyMixed)
	if err != nil {
		t.Fatal(err)
	}
	var gpus, draGPUs int64
	mig := map[string]int64{}
	for _, d := range LocalDemoTeams("") {
		if d.Team.Spec.Pool != localstack.RealPool {
			t.Errorf("team %s is in pool %s, not the real node's %s", d.Team.Name, d.Team.Spec.Pool, localstack.RealPool)
		}
		if errs := d.Team.Validate(); len(errs) > 0 {
			t.Errorf("team %s: %v", d.Team.Name, errs.ToAggregate())
		}
		if d.Team.Spec.DRA != nil {
			draGPUs += int64(*d.Team.Spec.Quota.GPUs)
			continue
		}
		gpus += int64(*d.Team.Spec.Quota.GPUs)
		for p, n := range d.Team.Spec.Quota.MIG {
			mig["nvidia.com/mig-"+p] += int64(n)
		}
	}
	if capacity["nvidia.com/gpu"] < gpus {
		t.Errorf("the real node has %d whole GPUs, the teams' quotas add up to %d", capacity["nvidia.com/gpu"], gpus)
	}
	var wholeDRA int64
	for _, g := range inv.GPUs {
		if g.DRA && !g.MIG.Enabled {
			wholeDRA++
		}
	}
	if draGPUs == 0 || wholeDRA < draGPUs {
		t.Errorf("the real node's DRA driver serves %d whole GPUs, the DRA teams' quotas add up to %d (want a DRA team, and room for it)", wholeDRA, draGPUs)
	}
	for res, n := range mig {
		if capacity[res] < n {
			t.Errorf("the real node has %d %s, the teams' quotas add up to %d", capacity[res], res, n)
		}
	}
}

// The local trial's DRA team is made with --dra, and its pod names the
// template the trial creates first in the team's cluster.
func TestLocalDRADemoTeam(t *testing.T) {
	teams := LocalDemoTeams("")
	d := teams[len(teams)-1]
	if got, want := CreateCommand(d.Team), "gpuvc team create infer --pool system --gpus 1 --dra"; got != want {
		t.Errorf("command %q, want %q", got, want)
	}
	if len(d.ClaimTemplates) != 1 || len(d.Pods) != 1 {
		t.Fatalf("want one template and one pod, got %d and %d", len(d.ClaimTemplates), len(d.Pods))
	}
	tmpl, pod := d.ClaimTemplates[0], d.Pods[0]
	if got := asks(pod); got != "resourceClaimTemplate: "+tmpl.Name {
		t.Errorf("pod %s asks %q", pod.Name, got)
	}
	if r := tmpl.Spec.Spec.Devices.Requests; len(r) != 1 || r[0].Exactly == nil || r[0].Exactly.DeviceClassName != "gpu.nvidia.com" || r[0].Exactly.Count != 1 {
		t.Errorf("template %s requests %+v, want one gpu.nvidia.com device", tmpl.Name, r)
	}
	if c := pod.Spec.Containers[0].Resources.Claims; len(c) != 1 || c[0].Name != pod.Spec.ResourceClaims[0].Name {
		t.Errorf("pod %s's container does not use its claim: %+v", pod.Name, c)
	}
	for _, other := range DemoTeams("") {
		if other.Team.Spec.DRA != nil {
			t.Errorf("kind trial team %s has spec.dra: the kind trial's nodes run no DRA driver", other.Team.Name)
		}
	}
}
