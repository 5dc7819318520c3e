package trial

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gpuvc/gpuvc/api/contract"
	"github.com/gpuvc/gpuvc/kind/nodepool"
)

func TestDemoTeamsAreValidTeamsOfTheTrialPools(t *testing.T) {
	pools := map[string]nodepool.Pool{}
	for _, p := range Pools() {
		pools[p.Name] = p
	}
	var commands []string
	for _, d := range DemoTeams("") {
		team := d.Team
		commands = append(commands, CreateCommand(team))
		if errs := team.Validate(); len(errs) > 0 {
			t.Errorf("team %s: %v", team.Name, errs.ToAggregate())
		}
		pool, ok := pools[team.Spec.Pool]
		if !ok || !pool.Taint {
			t.Errorf("team %s: pool %q is not a GPU pool of the trial", team.Name, team.Spec.Pool)
			continue
		}
		capacity := pool.Nodes[0].Capacity()

		// The pods fit the quota: whole GPUs plus one GPU reserved for the
		// fractions (two halves at most share it), MIG slices per profile.
		wholeGPUs, fractions := 0, 0
		mig := map[string]int{}
		for _, p := range d.Pods {
			if p.Namespace != "default" || p.Spec.NodeSelector != nil || p.Spec.Tolerations != nil || p.Spec.Affinity != nil {
				t.Errorf("team %s pod %s sets placement: team members ask for GPUs only", team.Name, p.Name)
			}
			if _, ok := p.Annotations[contract.AnnotationKAIFraction]; ok {
				fractions++
			}
			for name, q := range p.Spec.Containers[0].Resources.Limits {
				switch {
				case name == contract.ResourceGPU:
					wholeGPUs += int(q.Value())
				case strings.HasPrefix(string(name), contract.ResourceMIGPrefix):
					mig[strings.TrimPrefix(string(name), contract.ResourceMIGPrefix)] += int(q.Value())
					if _, offered := capacity[string(name)]; !offered {
						t.Errorf("team %s pod %s asks %s, which pool %s does not offer", team.Name, p.Name, name, pool.Name)
					}
				}
				if r := p.Spec.Containers[0].Resources.Requests[name]; strings.HasPrefix(string(name), "nvidia.com/") && !r.Equal(q) {
					t.Errorf("team %s pod %s: %s request %s != limit %s", team.Name, p.Name, name, r.String(), q.String())
				}
			}
		}
		if fractions > 0 {
			wholeGPUs++
		}
		if int(*team.Spec.Quota.GPUs) < wholeGPUs {
			t.Errorf("team %s: %d GPUs needed, quota %d", team.Name, wholeGPUs, *team.Spec.Quota.GPUs)
		}
		for profile, n := range mig {
			if int(team.Spec.Quota.MIG[profile]) < n {
				t.Errorf("team %s: %d %s needed, quota %d", team.Name, n, profile, team.Spec.Quota.MIG[profile])
			}
		}
	}
	want := []string{
		"gpuvc team create vision --pool a100 --gpus 2 --mig 1g.10gb=2 --fractions",
		"gpuvc team create llm --pool h100 --gpus 2 --fractions",
	}
	if diff := cmp.Diff(want, commands); diff != "" {
		t.Errorf("teams (-want +got):\n%s", diff)
	}
}

// Each team runs a whole-GPU and a fractional pod; the A100 team also a MIG one.
func TestDemoPodsCoverEveryKindOfRequest(t *testing.T) {
	got := map[string][]string{}
	for _, d := range DemoTeams("registry.example/busybox:1") {
		for _, p := range d.Pods {
			got[d.Team.Name] = append(got[d.Team.Name], p.Name+" "+asks(p))
			if img := p.Spec.Containers[0].Image; img != "registry.example/busybox:1" {
				t.Errorf("pod %s image %s", p.Name, img)
			}
			if !slices.Contains(p.Spec.Containers[0].Command, "sh") {
				t.Errorf("pod %s does not print its devices: %v", p.Name, p.Spec.Containers[0].Command)
			}
		}
	}
	want := map[string][]string{
		"vision": {"train nvidia.com/gpu: 1", "notebook nvidia.com/mig-1g.10gb: 1", "half gpu-fraction: 0.5"},
		"llm":    {"train nvidia.com/gpu: 1", "half gpu-fraction: 0.5"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("pods (-want +got):\n%s", diff)
	}
	if p := DemoTeams("")[0].Pods[0]; p.Spec.Containers[0].Image != DefaultWorkloadImage {
		t.Errorf("default image %s", p.Spec.Containers[0].Image)
	}
}
