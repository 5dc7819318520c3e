package nodeagent

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gpuvc/gpuvc/gpu/inventory"
)

func TestParseSpec(t *testing.T) {
	tests := map[string]struct {
		in   string
		want inventory.Spec
	}{
		"whole GPUs": {"product=NVIDIA-A100-SXM4-80GB,count=8",
			inventory.Spec{Product: "NVIDIA-A100-SXM4-80GB", Count: 8}},
		"one layout for all": {"product=NVIDIA-A100-SXM4-80GB,count=8,mig=all-balanced",
			inventory.Spec{Product: "NVIDIA-A100-SXM4-80GB", Count: 8, MIG: []string{"all-balanced"}}},
		"layout with commas": {"product=NVIDIA-H100-80GB-HBM3, count=2, mig=2x1g.10gb,3g.40gb, seed=n1",
			inventory.Spec{Product: "NVIDIA-H100-80GB-HBM3", Count: 2, MIG: []string{"2x1g.10gb,3g.40gb"}, Seed: "n1"}},
		"layout per GPU": {"product=NVIDIA-A100-SXM4-40GB,count=2,mig=all-1g.5gb;all-disabled",
			inventory.Spec{Product: "NVIDIA-A100-SXM4-40GB", Count: 2, MIG: []string{"all-1g.5gb", "all-disabled"}}},
		"product outside the catalog": {"product=NVIDIA-L40S,count=4,memory=46068",
			inventory.Spec{Product: "NVIDIA-L40S", Count: 4, MemoryMiB: 46068}},
		"the last two through DRA": {"product=NVIDIA-A100-SXM4-80GB,count=4,dra=2,mig=all-disabled;all-balanced;all-disabled;all-balanced",
			inventory.Spec{Product: "NVIDIA-A100-SXM4-80GB", Count: 4, DRA: 2, MIG: []string{"all-disabled", "all-balanced", "all-disabled", "all-balanced"}}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := ParseSpec(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("-want +got:\n%s", diff)
			}
		})
	}
}

// Every error names the part of the spec that is wrong.
func TestParseSpecErrors(t *testing.T) {
	tests := map[string]struct {
		in   string
		want []string
	}{
		"empty":             {"", []string{"empty simulated GPU spec"}},
		"not key=value":     {"product=NVIDIA-A100-SXM4-80GB,eight", []string{`"eight" is not key=value`}},
		"unknown key":       {"product=NVIDIA-A100-SXM4-80GB,count=8,colour=green", []string{`unknown key "colour"`, "product, count, mig"}},
		"duplicate key":     {"product=A,product=B,count=1", []string{`key "product" given twice`}},
		"no product":        {"count=8", []string{"missing product="}},
		"no count":          {"product=NVIDIA-A100-SXM4-80GB", []string{"missing count="}},
		"count not number":  {"product=NVIDIA-A100-SXM4-80GB,count=eight", []string{`count "eight"`}},
		"count zero":        {"product=NVIDIA-A100-SXM4-80GB,count=0", []string{`count "0"`}},
		"bad memory":        {"product=NVIDIA-L40S,count=1,memory=lots", []string{`memory "lots"`}},
		"unknown product":   {"product=NVIDIA-L40S,count=1", []string{`"NVIDIA-L40S"`, "memoryMiB"}},
		"unknown profile":   {"product=NVIDIA-A100-SXM4-80GB,count=1,mig=all-9g.99gb", []string{`"all-9g.99gb"`}},
		"too many profiles": {"product=NVIDIA-A100-SXM4-80GB,count=1,mig=8x1g.10gb", []string{`"8x1g.10gb"`}},
		"layouts != count":  {"product=NVIDIA-A100-SXM4-80GB,count=3,mig=all-balanced;all-disabled", []string{"2 MIG layouts for 3 GPUs"}},
		"empty layout":      {"product=NVIDIA-A100-SXM4-80GB,count=2,mig=all-balanced;", []string{`mig "all-balanced;" has an empty layout`}},
		"dra over count":    {"product=NVIDIA-A100-SXM4-80GB,count=2,dra=3", []string{`dra "3"`, "0 to count (2)"}},
		"dra not a number":  {"product=NVIDIA-A100-SXM4-80GB,count=2,dra=all", []string{`dra "all"`}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := ParseSpec(tc.in)
			if err == nil {
				t.Fatalf("ParseSpec(%q) succeeded, want an error", tc.in)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}
