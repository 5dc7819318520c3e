package inventory

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func mustSim(t *testing.T, s Spec) Inventory {
	t.Helper()
	inv, err := Simulate(s)
	if err != nil {
		t.Fatal(err)
	}
	return inv
}

func TestLabelsAndCapacity(t *testing.T) {
	tests := map[string]struct {
		spec       Spec
		strategy   Strategy
		wantLabels map[string]string
		wantCap    map[string]int64
	}{
		"whole GPUs": {
			spec: Spec{Product: "NVIDIA H100 80GB HBM3", Count: 8}, strategy: StrategyNone,
			wantLabels: map[string]string{
				"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3", "nvidia.com/gpu.count": "8",
				"nvidia.com/gpu.memory": "81559", "nvidia.com/mig.capable": "true",
			},
			wantCap: map[string]int64{"nvidia.com/gpu": 8},
		},
		"mixed with one GPU left whole": {
			spec:     Spec{Product: "NVIDIA-A100-SXM4-40GB", Count: 3, MIG: []string{"all-balanced", "all-1g.5gb+me", "all-disabled"}},
			strategy: StrategyMixed,
			wantLabels: map[string]string{
				"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-40GB", "nvidia.com/gpu.count": "3",
				"nvidia.com/gpu.memory": "40960", "nvidia.com/mig.capable": "true", "nvidia.com/mig.strategy": "mixed",
				"nvidia.com/mig-1g.5gb.count": "2", "nvidia.com/mig-1g.5gb.memory": "4864",
				"nvidia.com/mig-1g.5gb.slices.gi": "1", "nvidia.com/mig-1g.5gb.slices.ci": "1",
				"nvidia.com/mig-2g.10gb.count": "1", "nvidia.com/mig-2g.10gb.memory": "9856",
				"nvidia.com/mig-2g.10gb.slices.gi": "2", "nvidia.com/mig-2g.10gb.slices.ci": "2",
				"nvidia.com/mig-3g.20gb.count": "1", "nvidia.com/mig-3g.20gb.memory": "19968",
				"nvidia.com/mig-3g.20gb.slices.gi": "3", "nvidia.com/mig-3g.20gb.slices.ci": "3",
				"nvidia.com/mig-1g.5gb.me.count": "1", "nvidia.com/mig-1g.5gb.me.memory": "4864",
				"nvidia.com/mig-1g.5gb.me.slices.gi": "1", "nvidia.com/mig-1g.5gb.me.slices.ci": "1",
			},
			wantCap: map[string]int64{
				"nvidia.com/gpu": 1, "nvidia.com/mig-1g.5gb": 2, "nvidia.com/mig-2g.10gb": 1,
				"nvidia.com/mig-3g.20gb": 1, "nvidia.com/mig-1g.5gb.me": 1,
			},
		},
		"mixed, MIG on with no instances": {
			spec: Spec{Product: "NVIDIA-A30", Count: 2, MIG: []string{"all-enabled"}}, strategy: StrategyMixed,
			wantLabels: map[string]string{
				"nvidia.com/gpu.product": "NVIDIA-A30", "nvidia.com/gpu.count": "2",
				"nvidia.com/gpu.memory": "24576", "nvidia.com/mig.capable": "true", "nvidia.com/mig.strategy": "mixed",
			},
			wantCap: map[string]int64{},
		},
		"single": {
			spec: Spec{Product: "NVIDIA-H200", Count: 2, MIG: []string{"all-3g.71gb"}}, strategy: StrategySingle,
			wantLabels: map[string]string{
				"nvidia.com/gpu.product": "NVIDIA-H200-MIG-3g.71gb", "nvidia.com/gpu.count": "4",
				"nvidia.com/gpu.memory": "71424", "nvidia.com/mig.capable": "true", "nvidia.com/mig.strategy": "single",
			},
			wantCap: map[string]int64{"nvidia.com/gpu": 4},
		},
		"non-MIG GPU": {
			spec: Spec{Product: "NVIDIA L4", Count: 1, MemoryMiB: 23034}, strategy: StrategyMixed,
			wantLabels: map[string]string{
				"nvidia.com/gpu.product": "NVIDIA-L4", "nvidia.com/gpu.count": "1",
				"nvidia.com/gpu.memory": "23034", "nvidia.com/mig.capable": "false", "nvidia.com/mig.strategy": "mixed",
			},
			wantCap: map[string]int64{"nvidia.com/gpu": 1},
		},
		"no GPUs": {
			spec: Spec{Product: "NVIDIA-A30"}, strategy: StrategyMixed,
			wantLabels: map[string]string{}, wantCap: map[string]int64{},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			inv := mustSim(t, tc.spec)
			labels, err := Labels(inv, tc.strategy)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.wantLabels, labels); diff != "" {
				t.Errorf("labels -want +got:\n%s", diff)
			}
			caps, err := Capacity(inv, tc.strategy)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.wantCap, caps); diff != "" {
				t.Errorf("capacity -want +got:\n%s", diff)
			}
		})
	}
}

func TestLabelsErrors(t *testing.T) {
	mixedProducts := mustSim(t, Spec{Product: "NVIDIA-A30", Count: 1})
	mixedProducts.GPUs = append(mixedProducts.GPUs, mustSim(t, Spec{Product: "NVIDIA-H200", Count: 1}).GPUs...)
	tests := map[string]struct {
		inv      Inventory
		strategy Strategy
		want     string
	}{
		"single with two profiles": {mustSim(t, Spec{Product: "NVIDIA-A30", Count: 1, MIG: []string{"all-balanced"}}), StrategySingle,
			"strategy single needs one MIG profile on the node, found 2: [1g.6gb 2g.12gb]"},
		"single with MIG off": {mustSim(t, Spec{Product: "NVIDIA-A30", Count: 2, MIG: []string{"all-4g.24gb", "all-disabled"}}), StrategySingle,
			"strategy single needs MIG enabled on every GPU; GPU 1"},
		"unknown strategy": {mustSim(t, Spec{Product: "NVIDIA-A30", Count: 1}), Strategy("auto"), `unknown MIG strategy "auto"`},
		"mixed products":   {mixedProducts, StrategyNone, `node mixes GPU products "NVIDIA-A30" and "NVIDIA-H200"`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := Labels(tc.inv, tc.strategy)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Labels() error = %v, want %q", err, tc.want)
			}
			if name != "mixed products" {
				if _, err := Capacity(tc.inv, tc.strategy); err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Errorf("Capacity() error = %v, want %q", err, tc.want)
				}
			}
		})
	}
}

// What NVML tells about driver, CUDA and compute capability becomes GFD's
// labels, with GFD's names and values (an H200 on driver 580.159.04).
func TestVersionLabels(t *testing.T) {
	inv := Inventory{DriverVersion: "580.159.04", CUDAVersion: "13.0", GPUs: []GPU{
		{UUID: "GPU-a", Product: "NVIDIA H200", MemoryMiB: 143771, ComputeCapability: "9.0", MIG: MIG{Capable: true}},
	}}
	got, err := Labels(inv, StrategyNone)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"nvidia.com/gpu.product": "NVIDIA-H200", "nvidia.com/gpu.count": "1", "nvidia.com/gpu.memory": "143771",
		"nvidia.com/mig.capable": "true", "nvidia.com/gpu.compute.major": "9", "nvidia.com/gpu.compute.minor": "0",
		"nvidia.com/gpu.family": "hopper", "nvidia.com/cuda.driver.major": "580", "nvidia.com/cuda.driver.minor": "159",
		"nvidia.com/cuda.driver.rev": "04", "nvidia.com/cuda.runtime.major": "13", "nvidia.com/cuda.runtime.minor": "0",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("labels (-want +got):\n%s", diff)
	}
}

func TestFamily(t *testing.T) {
	for cc, want := range map[[2]int]string{
		{7, 0}: "volta", {7, 5}: "turing", {8, 0}: "ampere", {8, 6}: "ampere", {8, 9}: "ada-lovelace",
		{9, 0}: "hopper", {10, 0}: "blackwell", {12, 0}: "blackwell", {4, 0}: "undefined",
	} {
		if got := Family(cc[0], cc[1]); got != want {
			t.Errorf("Family(%d.%d) = %q, want %q", cc[0], cc[1], got, want)
		}
	}
}
