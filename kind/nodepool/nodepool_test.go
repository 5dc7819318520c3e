package nodepool

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestCapacityOfANodeWithWholeAndMIGGPUs(t *testing.T) {
	for name, tc := range map[string]struct {
		gpus *GPUs
		want map[string]string
	}{
		"whole GPUs only": {
			gpus: &GPUs{Product: ProductH100_80GB, Count: 8},
			want: map[string]string{"nvidia.com/gpu": "8"},
		},
		"every GPU in MIG mode": {
			gpus: &GPUs{Product: ProductA100_80GB, Count: 8, MIG: map[string]int{"1g.10gb": 16}},
			want: map[string]string{"nvidia.com/mig-1g.10gb": "16"},
		},
		"half of them in MIG mode": {
			gpus: &GPUs{Product: ProductA100_80GB, Count: 8, MIGGPUs: 4, MIG: map[string]int{"1g.10gb": 8, "3g.40gb": 4}},
			want: map[string]string{"nvidia.com/gpu": "4", "nvidia.com/mig-1g.10gb": "8", "nvidia.com/mig-3g.40gb": "4"},
		},
		"two of the whole GPUs through DRA": {
			gpus: &GPUs{Product: ProductA100_80GB, Count: 8, MIGGPUs: 4, MIG: map[string]int{"1g.10gb": 8}, DRA: 2},
			want: map[string]string{"nvidia.com/gpu": "2", "nvidia.com/mig-1g.10gb": "8"},
		},
		"every GPU through DRA": {
			gpus: &GPUs{Product: ProductH100_80GB, Count: 8, DRA: 8},
			want: map[string]string{},
		},
	} {
		t.Run(name, func(t *testing.T) {
			got := map[string]string{}
			for k, v := range (Node{Name: "n", GPU: tc.gpus}).Capacity() {
				if strings.HasPrefix(k, "nvidia.com/") {
					got[k] = v
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("GPU capacity (-want +got):\n%s", diff)
			}
		})
	}
}

func TestValidateRefusesMIGGPUsWithoutMIGDevices(t *testing.T) {
	for name, g := range map[string]*GPUs{
		"more than the GPUs": {Product: ProductA100_80GB, Count: 2, MIGGPUs: 3, MIG: map[string]int{"1g.10gb": 7}},
		"no MIG devices":     {Product: ProductA100_80GB, Count: 2, MIGGPUs: 1},
		"negative":           {Product: ProductA100_80GB, Count: 2, MIGGPUs: -1, MIG: map[string]int{"1g.10gb": 7}},
	} {
		t.Run(name, func(t *testing.T) {
			err := Validate([]Pool{{Name: "p", Nodes: []Node{{Name: "n", GPU: g}}}})
			if err == nil || !strings.Contains(err.Error(), "GPUs in MIG mode") {
				t.Errorf("err = %v", err)
			}
		})
	}
}

func TestValidateRefusesDRAGPUsBeyondTheWholeOnes(t *testing.T) {
	for name, g := range map[string]*GPUs{
		"more than the GPUs": {Product: ProductH100_80GB, Count: 2, DRA: 3},
		"GPUs in MIG mode":   {Product: ProductA100_80GB, Count: 2, MIG: map[string]int{"1g.10gb": 14}, DRA: 1},
		"negative":           {Product: ProductH100_80GB, Count: 2, DRA: -1},
	} {
		t.Run(name, func(t *testing.T) {
			err := Validate([]Pool{{Name: "p", Nodes: []Node{{Name: "n", GPU: g}}}})
			if err == nil || !strings.Contains(err.Error(), "GPUs served through DRA: want 0 to") {
				t.Errorf("err = %v", err)
			}
		})
	}
}
