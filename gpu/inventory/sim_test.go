package inventory

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gpuvc/gpuvc/gpu/mig"
)

// layouts renders each GPU as "profile@start" lists ("off" when MIG is off).
func layouts(inv Inventory) []string {
	var out []string
	for _, g := range inv.GPUs {
		if !g.MIG.Enabled {
			out = append(out, "off")
			continue
		}
		var parts []string
		for _, gi := range g.MIG.Instances {
			parts = append(parts, fmt.Sprintf("%s@%d", gi.Profile, gi.Start))
		}
		out = append(out, strings.Join(parts, " "))
	}
	return out
}

func TestSimulateLayouts(t *testing.T) {
	tests := map[string]struct {
		spec Spec
		want []string
	}{
		"a100-40 balanced":    {Spec{Product: "NVIDIA-A100-SXM4-40GB", Count: 2, MIG: []string{"all-balanced"}}, []string{"1g.5gb@0 1g.5gb@1 2g.10gb@2 3g.20gb@4", "1g.5gb@0 1g.5gb@1 2g.10gb@2 3g.20gb@4"}},
		"a100-80 balanced":    {Spec{Product: "NVIDIA A100 80GB PCIe", Count: 1, MIG: []string{"all-balanced"}}, []string{"1g.10gb@0 1g.10gb@1 2g.20gb@2 3g.40gb@4"}},
		"h200 balanced":       {Spec{Product: "NVIDIA-H200", Count: 1, MIG: []string{"all-balanced"}}, []string{"1g.18gb@0 1g.18gb@1 2g.35gb@2 3g.71gb@4"}},
		"a30 balanced":        {Spec{Product: "NVIDIA-A30", Count: 1, MIG: []string{"all-balanced"}}, []string{"1g.6gb@0 1g.6gb@1 2g.12gb@2"}},
		"all 1g":              {Spec{Product: "NVIDIA-H100-80GB-HBM3", Count: 1, MIG: []string{"all-1g.10gb"}}, []string{"1g.10gb@0 1g.10gb@1 1g.10gb@2 1g.10gb@3 1g.10gb@4 1g.10gb@5 1g.10gb@6"}},
		"all double 1g":       {Spec{Product: "NVIDIA-H100-NVL", Count: 1, MIG: []string{"all-1g.24gb"}}, []string{"1g.24gb@0 1g.24gb@2 1g.24gb@4 1g.24gb@6"}},
		"all 7g":              {Spec{Product: "NVIDIA-GH200-480GB", Count: 1, MIG: []string{"all-7g.96gb"}}, []string{"7g.96gb@0"}},
		"all +me":             {Spec{Product: "NVIDIA-A30", Count: 1, MIG: []string{"all-2g.12gb+me"}}, []string{"2g.12gb+me@0"}},
		"explicit with count": {Spec{Product: "A100-40GB", Count: 1, MIG: []string{"3g.20gb, 4g.20gb"}}, []string{"4g.20gb@0 3g.20gb@4"}},
		"explicit repeated":   {Spec{Product: "A100-40GB", Count: 1, MIG: []string{"2x3g.20gb"}}, []string{"3g.20gb@0 3g.20gb@4"}},
		"per GPU":             {Spec{Product: "NVIDIA-A30", Count: 3, MIG: []string{"all-disabled", "all-enabled", "4x1g.6gb"}}, []string{"off", "", "1g.6gb@0 1g.6gb@1 1g.6gb@2 1g.6gb@3"}},
		"no MIG":              {Spec{Product: "NVIDIA-A100-SXM4-40GB", Count: 2}, []string{"off", "off"}},
		"non-MIG product":     {Spec{Product: "NVIDIA-L4", Count: 1, MemoryMiB: 23034}, []string{"off"}},
		"zero GPUs":           {Spec{Product: "NVIDIA-A30"}, nil},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			inv, err := Simulate(tc.spec)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, layouts(inv)); diff != "" {
				t.Errorf("-want +got:\n%s", diff)
			}
			checkSimValid(t, inv)
		})
	}
}

// checkSimValid: every simulated GPU obeys the catalog's placement rules and
// each GPU instance has exactly one MIG device with a unique UUID.
func checkSimValid(t *testing.T, inv Inventory) {
	t.Helper()
	seen := map[string]bool{}
	for _, g := range inv.GPUs {
		if seen[g.UUID] || !strings.HasPrefix(g.UUID, "GPU-sim-") {
			t.Errorf("bad or repeated GPU UUID %q", g.UUID)
		}
		seen[g.UUID] = true
		if !g.MIG.Enabled {
			continue
		}
		m, err := mig.Lookup(g.Product)
		if err != nil {
			t.Fatal(err)
		}
		var l []mig.Instance
		for _, gi := range g.MIG.Instances {
			l = append(l, mig.Instance{Profile: gi.Profile, Start: gi.Start})
			p, _ := m.Profile(gi.Profile)
			if gi.Size != p.MemorySlots || gi.ProfileID != p.DriverID || gi.MemoryMiB != int64(p.MemoryMiB) {
				t.Errorf("instance %+v disagrees with catalog %+v", gi, p)
			}
			if len(gi.Devices) != 1 || seen[gi.Devices[0].UUID] || !strings.HasPrefix(gi.Devices[0].UUID, "MIG-sim-") {
				t.Errorf("instance %+v: want one unique MIG-sim device", gi)
			}
			for _, d := range gi.Devices {
				seen[d.UUID] = true
			}
		}
		if err := m.Validate(l); err != nil {
			t.Errorf("GPU %d: %v", g.Index, err)
		}
	}
}

func TestSimulateErrors(t *testing.T) {
	tests := map[string]struct {
		spec Spec
		want string
	}{
		"does not fit":      {Spec{Product: "NVIDIA-A30", Count: 1, MIG: []string{"2x4g.24gb"}}, `GPU 0: MIG layout "2x4g.24gb": [2×4g.24gb] does not fit on 1 A30-24GB GPU(s): left over [1×4g.24gb]`},
		"wrong model":       {Spec{Product: "NVIDIA-A30", Count: 1, MIG: []string{"all-1g.5gb"}}, `MIG layout "all-1g.5gb": A30-24GB offers no MIG profile "1g.5gb"`},
		"bad count":         {Spec{Product: "NVIDIA-A30", Count: 1, MIG: []string{"0x1g.6gb"}}, `bad count in "0x1g.6gb"`},
		"bad profile":       {Spec{Product: "NVIDIA-A30", Count: 1, MIG: []string{"1g.6gb,junk"}}, `A30-24GB offers no MIG profile "junk"`},
		"layout count":      {Spec{Product: "NVIDIA-A30", Count: 3, MIG: []string{"all-enabled", "all-enabled"}}, "2 MIG layouts for 3 GPUs"},
		"MIG on non-MIG":    {Spec{Product: "NVIDIA-L4", Count: 1, MemoryMiB: 23034, MIG: []string{"all-enabled"}}, `unknown MIG GPU model "NVIDIA-L4"`},
		"unknown no memory": {Spec{Product: "NVIDIA-L4", Count: 1}, `simulated product "NVIDIA-L4" is not in the MIG catalog: set its memoryMiB`},
		"negative count":    {Spec{Product: "NVIDIA-A30", Count: -1}, "simulated GPU count -1 is negative"},
		"DRA over count":    {Spec{Product: "NVIDIA-A30", Count: 2, DRA: 3}, "3 GPUs served through DRA of 2 simulated: want 0 to 2"},
		"DRA negative":      {Spec{Product: "NVIDIA-A30", Count: 2, DRA: -1}, "-1 GPUs served through DRA of 2 simulated"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := Simulate(tc.spec)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Simulate() error = %v, want %q", err, tc.want)
			}
		})
	}
}

func TestSimulateDeterministicUUIDs(t *testing.T) {
	spec := Spec{Product: "NVIDIA-A100-SXM4-40GB", Count: 2, MIG: []string{"all-balanced"}, Seed: "node-a"}
	a, _ := Simulate(spec)
	b, _ := Simulate(spec)
	if diff := cmp.Diff(a, b); diff != "" {
		t.Errorf("same spec, different inventory:\n%s", diff)
	}
	spec.Seed = "node-b"
	c, _ := Simulate(spec)
	if a.GPUs[0].UUID == c.GPUs[0].UUID || a.GPUs[0].MIG.Instances[0].Devices[0].UUID == c.GPUs[0].MIG.Instances[0].Devices[0].UUID {
		t.Error("different seeds must give different UUIDs")
	}
	if got := a.GPUs[0].UUID; len(got) != len("GPU-sim-")+36 {
		t.Errorf("UUID %q is not UUID-shaped", got)
	}
}

// The JSON field names are a contract with the node agent's annotation.
func TestInventoryJSON(t *testing.T) {
	inv, err := Simulate(Spec{Product: "A30-24GB", Count: 1, MIG: []string{"1g.6gb"}, Seed: "n"})
	if err != nil {
		t.Fatal(err)
	}
	inv.GPUs[0].UUID = "GPU-x"
	inv.GPUs[0].MIG.Instances[0].Devices[0].UUID = "MIG-x"
	got, err := json.Marshal(inv)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"simulated":true,"gpus":[{"index":0,"uuid":"GPU-x","product":"NVIDIA-A30","memoryMiB":24576,` +
		`"mig":{"capable":true,"enabled":true,"pending":true,"instances":[{"id":1,"profile":"1g.6gb","profileId":14,` +
		`"start":0,"size":1,"memoryMiB":5952,"devices":[{"uuid":"MIG-x","computeInstanceId":0}]}]}}]}`
	if diff := cmp.Diff(want, string(got)); diff != "" {
		t.Errorf("-want +got:\n%s", diff)
	}
	var back Inventory
	if err := json.Unmarshal(got, &back); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(inv, back); diff != "" {
		t.Errorf("round trip -want +got:\n%s", diff)
	}
}

// Spec.DRA hands the last GPUs to DRA: they are marked in the inventory (and
// its JSON), left out of the device plugin's capacity, and SplitDRA parts
// the inventory the same way.
func TestSimulateDRAGPUs(t *testing.T) {
	spec := Spec{Product: "NVIDIA-A100-SXM4-80GB", Count: 4, DRA: 2, Seed: "n",
		MIG: []string{"all-disabled", "all-balanced", "all-disabled", "all-balanced"}}
	inv, err := Simulate(spec)
	if err != nil {
		t.Fatal(err)
	}
	var dra []bool
	for _, g := range inv.GPUs {
		dra = append(dra, g.DRA)
	}
	if diff := cmp.Diff([]bool{false, false, true, true}, dra); diff != "" {
		t.Errorf("GPU.DRA by index -want +got:\n%s", diff)
	}
	plugin, viaDRA := SplitDRA(inv)
	if len(plugin.GPUs) != 2 || plugin.GPUs[1].Index != 1 || len(viaDRA.GPUs) != 2 || viaDRA.GPUs[0].Index != 2 || !viaDRA.Simulated {
		t.Errorf("SplitDRA = %+v / %+v: want GPUs 0-1 and 2-3, both simulated", plugin.GPUs, viaDRA.GPUs)
	}
	capacity, err := Capacity(inv, StrategyMixed)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int64{"nvidia.com/gpu": 1, "nvidia.com/mig-1g.10gb": 2, "nvidia.com/mig-2g.20gb": 1, "nvidia.com/mig-3g.40gb": 1}
	if diff := cmp.Diff(want, capacity); diff != "" {
		t.Errorf("device-plugin capacity -want +got:\n%s", diff)
	}
	b, err := json.Marshal(inv.GPUs[3])
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"dra":true`) {
		t.Errorf("GPU 3 JSON %s does not say it is served through DRA", b)
	}
	if got := spec.Flag(); !strings.Contains(got, ",dra=2,mig=") {
		t.Errorf("Flag() = %q: want dra=2 before the MIG layouts", got)
	}
}
