package trial

import (
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gpuvc/gpuvc/gpu/inventory"
	"github.com/gpuvc/gpuvc/gpu/nodeagent"
	"github.com/gpuvc/gpuvc/gpu/nodeagent/deviceplugin"
	"github.com/gpuvc/gpuvc/kind/nodepool"
)

func TestSimulateSpecsOfTheTrialPools(t *testing.T) {
	got, err := SimulateSpecs(Pools())
	if err != nil {
		t.Fatal(err)
	}
	balanced := "2x1g.10gb,2g.20gb,3g.40gb"
	want := map[string]string{
		"system": "product=NVIDIA-A100-SXM4-80GB,count=4,mig=all-disabled;all-disabled;" + balanced + ";" + balanced,
		"a100": "product=NVIDIA-A100-SXM4-80GB,count=8,mig=all-disabled;all-disabled;all-disabled;all-disabled;" +
			strings.Repeat(balanced+";", 3) + balanced,
		"h100": "product=NVIDIA-H100-80GB-HBM3,count=8",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("agent.simulate (-want +got):\n%s", diff)
	}
}

// What each node's kubelet will advertise (the simulated device plugin serving the
// pool's spec, parsed as `gpuvc agent --simulate` parses it) is the node's GPU
// capacity in kind/nodepool, and the labels it registers with are exactly those the
// agent publishes for that spec.
func TestEveryTrialNodeAdvertisesItsPoolsGPUs(t *testing.T) {
	specs, err := SimulateSpecs(Pools())
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := ClusterConfig(Pools())
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range Pools() {
		for _, n := range p.Nodes {
			t.Run(n.Name, func(t *testing.T) {
				spec, err := nodeagent.ParseSpec(specs[p.Name])
				if err != nil {
					t.Fatalf("the agent refuses --simulate %q: %v", specs[p.Name], err)
				}
				spec.Seed = n.Name // the agent's default
				inv, err := inventory.Simulate(spec)
				if err != nil {
					t.Fatal(err)
				}
				advertised := map[string]string{}
				for _, r := range deviceplugin.Resources(inv) {
					advertised[r.Name] = strconv.Itoa(len(r.DeviceIDs))
				}
				capacity := map[string]string{}
				for k, v := range n.Capacity() {
					if strings.HasPrefix(k, "nvidia.com/") {
						capacity[k] = v
					}
				}
				if diff := cmp.Diff(capacity, advertised); diff != "" {
					t.Errorf("device plugin vs node capacity (-capacity +advertised):\n%s", diff)
				}

				pub, err := nodeagent.Build(inv, inventory.StrategyMixed, false)
				if err != nil {
					t.Fatal(err)
				}
				registered := cfg.Nodes[1+i].Labels // one node per pool, in order
				for k, v := range pub.Labels {
					if registered[k] != v {
						t.Errorf("label %s: registered %q, the agent publishes %q", k, registered[k], v)
					}
				}
			})
		}
	}
}

func TestSimulationOfNodepoolGPUs(t *testing.T) {
	for name, tc := range map[string]struct {
		gpus nodepool.GPUs
		want string
	}{
		"whole GPUs":              {nodepool.GPUs{Product: nodepool.ProductH100_80GB, Count: 2}, "product=NVIDIA-H100-80GB-HBM3,count=2"},
		"all in MIG mode":         {nodepool.GPUs{Product: nodepool.ProductA100_80GB, Count: 2, MIG: map[string]int{"1g.10gb": 14}}, "product=NVIDIA-A100-SXM4-80GB,count=2,mig=7x1g.10gb"},
		"default pools' MIG node": {*nodepool.Default()[1].Nodes[1].GPU, "product=NVIDIA-A100-SXM4-80GB,count=8,mig=2x1g.10gb,2g.20gb,3g.40gb"},
		"outside the MIG catalog": {nodepool.GPUs{Product: "NVIDIA-L40S", Count: 4, MemoryMiB: 46068}, "product=NVIDIA-L40S,count=4,memory=46068"},
	} {
		t.Run(name, func(t *testing.T) {
			spec, err := simulation(tc.gpus)
			if err != nil {
				t.Fatal(err)
			}
			if got := specString(spec); got != tc.want {
				t.Errorf("spec = %q, want %q", got, tc.want)
			}
		})
	}
}
