package mig

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// row is one expected catalog line; resource names are checked from it too.
type row struct {
	name             string
	compute, gb, mib int
	est              bool
	slots            int
	starts           []int
	max              int
	me               bool
	driverID         int
	resource         string
}

var (
	s1g  = []int{0, 1, 2, 3, 4, 5, 6}
	s1gd = []int{0, 2, 4, 6}
	s2g  = []int{0, 2, 4}
	s3g  = []int{0, 4}
	s0   = []int{0}
)

func TestCatalogProfiles(t *testing.T) {
	tests := map[string][]row{
		"A100-40GB": {
			{"1g.5gb", 1, 5, 4864, false, 1, s1g, 7, false, 19, "nvidia.com/mig-1g.5gb"},
			{"1g.5gb+me", 1, 5, 4864, false, 1, s1g, 1, true, 20, "nvidia.com/mig-1g.5gb.me"},
			{"1g.10gb", 1, 10, 9856, false, 2, s1gd, 4, false, 15, "nvidia.com/mig-1g.10gb"},
			{"2g.10gb", 2, 10, 9856, false, 2, s2g, 3, false, 14, "nvidia.com/mig-2g.10gb"},
			{"3g.20gb", 3, 20, 19968, false, 4, s3g, 2, false, 9, "nvidia.com/mig-3g.20gb"},
			{"4g.20gb", 4, 20, 19968, false, 4, s0, 1, false, 5, "nvidia.com/mig-4g.20gb"},
			{"7g.40gb", 7, 40, 40192, false, 8, s0, 1, false, 0, "nvidia.com/mig-7g.40gb"},
		},
		"A100-80GB": {
			{"1g.10gb", 1, 10, 9728, false, 1, s1g, 7, false, 19, "nvidia.com/mig-1g.10gb"},
			{"1g.10gb+me", 1, 10, 9728, false, 1, s1g, 1, true, 20, "nvidia.com/mig-1g.10gb.me"},
			{"1g.20gb", 1, 20, 19968, false, 2, s1gd, 4, false, 15, "nvidia.com/mig-1g.20gb"},
			{"2g.20gb", 2, 20, 19968, false, 2, s2g, 3, false, 14, "nvidia.com/mig-2g.20gb"},
			{"3g.40gb", 3, 40, 40192, false, 4, s3g, 2, false, 9, "nvidia.com/mig-3g.40gb"},
			{"4g.40gb", 4, 40, 40192, false, 4, s0, 1, false, 5, "nvidia.com/mig-4g.40gb"},
			{"7g.80gb", 7, 80, 80384, true, 8, s0, 1, false, 0, "nvidia.com/mig-7g.80gb"},
		},
		"H100-80GB": {
			{"1g.10gb", 1, 10, 9984, false, 1, s1g, 7, false, 19, "nvidia.com/mig-1g.10gb"},
			{"1g.10gb+me", 1, 10, 9984, false, 1, s1g, 1, true, 20, "nvidia.com/mig-1g.10gb.me"},
			{"1g.20gb", 1, 20, 20096, false, 2, s1gd, 4, false, 15, "nvidia.com/mig-1g.20gb"},
			{"2g.20gb", 2, 20, 20096, false, 2, s2g, 3, false, 14, "nvidia.com/mig-2g.20gb"},
			{"3g.40gb", 3, 40, 40192, true, 4, s3g, 2, false, 9, "nvidia.com/mig-3g.40gb"},
			{"4g.40gb", 4, 40, 40192, true, 4, s0, 1, false, 5, "nvidia.com/mig-4g.40gb"},
			{"7g.80gb", 7, 80, 80384, true, 8, s0, 1, false, 0, "nvidia.com/mig-7g.80gb"},
		},
		"H100-NVL-94GB": {
			{"1g.12gb", 1, 12, 11008, false, 1, s1g, 7, false, 19, "nvidia.com/mig-1g.12gb"},
			{"1g.12gb+me", 1, 12, 11008, false, 1, s1g, 1, true, 20, "nvidia.com/mig-1g.12gb.me"},
			{"1g.24gb", 1, 24, 22144, false, 2, s1gd, 4, false, 15, "nvidia.com/mig-1g.24gb"},
			{"2g.24gb", 2, 24, 22144, false, 2, s2g, 3, false, 14, "nvidia.com/mig-2g.24gb"},
			{"3g.47gb", 3, 47, 44288, true, 4, s3g, 2, false, 9, "nvidia.com/mig-3g.47gb"},
			{"4g.47gb", 4, 47, 44288, true, 4, s0, 1, false, 5, "nvidia.com/mig-4g.47gb"},
			{"7g.94gb", 7, 94, 88576, true, 8, s0, 1, false, 0, "nvidia.com/mig-7g.94gb"},
		},
		"H100-96GB": {
			{"1g.12gb", 1, 12, 11008, true, 1, s1g, 7, false, 19, "nvidia.com/mig-1g.12gb"},
			{"1g.12gb+me", 1, 12, 11008, true, 1, s1g, 1, true, 20, "nvidia.com/mig-1g.12gb.me"},
			{"1g.24gb", 1, 24, 22144, true, 2, s1gd, 4, false, 15, "nvidia.com/mig-1g.24gb"},
			{"2g.24gb", 2, 24, 22144, true, 2, s2g, 3, false, 14, "nvidia.com/mig-2g.24gb"},
			{"3g.48gb", 3, 48, 44288, true, 4, s3g, 2, false, 9, "nvidia.com/mig-3g.48gb"},
			{"4g.48gb", 4, 48, 44288, true, 4, s0, 1, false, 5, "nvidia.com/mig-4g.48gb"},
			{"7g.96gb", 7, 96, 88576, true, 8, s0, 1, false, 0, "nvidia.com/mig-7g.96gb"},
		},
		"H200-141GB": {
			{"1g.18gb", 1, 18, 16384, false, 1, s1g, 7, false, 19, "nvidia.com/mig-1g.18gb"},
			{"1g.18gb+me", 1, 18, 16384, false, 1, s1g, 1, true, 20, "nvidia.com/mig-1g.18gb.me"},
			{"1g.35gb", 1, 35, 33280, false, 2, s1gd, 4, false, 15, "nvidia.com/mig-1g.35gb"},
			{"2g.35gb", 2, 35, 33280, false, 2, s2g, 3, false, 14, "nvidia.com/mig-2g.35gb"},
			{"3g.71gb", 3, 71, 71424, false, 4, s3g, 2, false, 9, "nvidia.com/mig-3g.71gb"},
			{"4g.71gb", 4, 71, 71424, false, 4, s0, 1, false, 5, "nvidia.com/mig-4g.71gb"},
			{"7g.141gb", 7, 141, 143360, false, 8, s0, 1, false, 0, "nvidia.com/mig-7g.141gb"},
		},
		"A30-24GB": {
			{"1g.6gb", 1, 6, 5952, false, 1, []int{0, 1, 2, 3}, 4, false, 14, "nvidia.com/mig-1g.6gb"},
			{"1g.6gb+me", 1, 6, 5952, false, 1, []int{0, 1, 2, 3}, 1, true, 21, "nvidia.com/mig-1g.6gb.me"},
			{"2g.12gb", 2, 12, 11968, false, 2, []int{0, 2}, 2, false, 5, "nvidia.com/mig-2g.12gb"},
			{"2g.12gb+me", 2, 12, 11968, false, 2, []int{0, 2}, 1, true, 6, "nvidia.com/mig-2g.12gb.me"},
			{"4g.24gb", 4, 24, 24000, false, 4, s0, 1, false, 0, "nvidia.com/mig-4g.24gb"},
		},
	}
	if len(tests) != len(Models()) {
		t.Errorf("test covers %d models, catalog has %d", len(tests), len(Models()))
	}
	for name, rows := range tests {
		t.Run(name, func(t *testing.T) {
			m := mustLookup(t, name)
			var got []row
			for _, p := range m.Profiles {
				got = append(got, row{p.Name, p.ComputeSlices, p.MemoryGB, p.MemoryMiB, p.MemoryEstimated,
					p.MemorySlots, p.Starts, p.MaxInstances, p.MediaExtensions, p.DriverID, p.ResourceName()})
			}
			if diff := cmp.Diff(rows, got, cmp.AllowUnexported(row{})); diff != "" {
				t.Errorf("-want +got:\n%s", diff)
			}
		})
	}
}

func TestCatalogGeometry(t *testing.T) {
	tests := map[string]struct{ slots, compute, memMiB int }{
		"A100-40GB":     {8, 7, 40960},
		"A100-80GB":     {8, 7, 81920},
		"H100-80GB":     {8, 7, 81559},
		"H100-NVL-94GB": {8, 7, 95830},
		"H100-96GB":     {8, 7, 97280},
		"H200-141GB":    {8, 7, 143771},
		"A30-24GB":      {4, 4, 24576},
	}
	for name, want := range tests {
		t.Run(name, func(t *testing.T) {
			m := mustLookup(t, name)
			got := struct{ slots, compute, memMiB int }{m.Slots, m.ComputeSlices, m.MemoryMiB}
			if diff := cmp.Diff(want, got, cmp.AllowUnexported(got)); diff != "" {
				t.Errorf("-want +got:\n%s", diff)
			}
			// Every profile's name must parse back to its fields.
			for _, p := range m.Profiles {
				n, err := ParseProfileName(p.Name)
				if err != nil {
					t.Fatal(err)
				}
				if n.ComputeSlices != p.ComputeSlices || n.MemoryGB != p.MemoryGB || n.MediaExtensions != p.MediaExtensions {
					t.Errorf("%s: name disagrees with fields %+v", p.Name, p)
				}
				if p.MemoryMiB > m.MemoryMiB || p.MemoryMiB > p.MemoryGB*1024 {
					t.Errorf("%s: %d MiB is more than the GPU or the name allows", p.Name, p.MemoryMiB)
				}
			}
		})
	}
}

// MaxInstances must agree with the placement rules: exactly that many
// copies fit on an empty GPU (checked by the exact packer).
func TestMaxInstancesMatchPlacements(t *testing.T) {
	for _, m := range Models() {
		for _, p := range m.Profiles {
			t.Run(m.Name+"/"+p.Name, func(t *testing.T) {
				req := make([]string, p.MaxInstances)
				for i := range req {
					req[i] = p.Name
				}
				if _, err := m.Pack([][]Instance{nil}, req); err != nil {
					t.Errorf("%d×%s should fit one GPU: %v", p.MaxInstances, p.Name, err)
				}
				if _, err := m.Pack([][]Instance{nil}, append(req, p.Name)); err == nil {
					t.Errorf("%d×%s should not fit one GPU", p.MaxInstances+1, p.Name)
				}
			})
		}
	}
}

func TestLookup(t *testing.T) {
	tests := map[string]string{
		"NVIDIA-A100-SXM4-40GB":            "A100-40GB",
		"NVIDIA A100-SXM4-40GB":            "A100-40GB",
		"NVIDIA A100-PCIE-40GB":            "A100-40GB",
		"NVIDIA-A100-SXM4-80GB":            "A100-80GB",
		"NVIDIA-A100-80GB-PCIe":            "A100-80GB",
		"NVIDIA A100 80GB PCIe":            "A100-80GB",
		"NVIDIA-H100-80GB-HBM3":            "H100-80GB",
		"NVIDIA H100 80GB HBM3":            "H100-80GB",
		"NVIDIA-H100-PCIe":                 "H100-80GB",
		"NVIDIA-H100-NVL":                  "H100-NVL-94GB",
		"NVIDIA H100 NVL":                  "H100-NVL-94GB",
		"NVIDIA-GH200-480GB":               "H100-96GB",
		"NVIDIA GH200 480GB":               "H100-96GB",
		"NVIDIA-H200":                      "H200-141GB",
		"NVIDIA-A30":                       "A30-24GB",
		"NVIDIA A30":                       "A30-24GB",
		"nvidia-a30":                       "A30-24GB",
		"  NVIDIA   A30 ":                  "A30-24GB",
		"NVIDIA-A100-SXM4-40GB-MIG-1g.5gb": "A100-40GB",
		"NVIDIA-H200-MIG-7g.141gb":         "H200-141GB",
		"NVIDIA-A30-MIG-2g.12gb+me":        "A30-24GB",
	}
	for _, m := range Models() {
		tests[m.Name] = m.Name // catalog names resolve to themselves
	}
	for in, want := range tests {
		t.Run(in, func(t *testing.T) {
			m, err := Lookup(in)
			if err != nil {
				t.Fatal(err)
			}
			if m.Name != want {
				t.Errorf("Lookup(%q) = %s, want %s", in, m.Name, want)
			}
		})
	}
}

func TestLookupUnknown(t *testing.T) {
	for name, in := range map[string]string{
		"no MIG":      "NVIDIA-A10",
		"mock prefix": "Mock NVIDIA A100-SXM4-40GB",
		"blackwell":   "NVIDIA-B200",
		"empty":       "",
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Lookup(in)
			if err == nil {
				t.Fatalf("Lookup(%q) succeeded", in)
			}
			for _, want := range []string{`"` + in + `"`, "A100-40GB", "NVIDIA-A100-SXM4-40GB", "A30-24GB", "NVIDIA-H200"} {
				if !contains(err.Error(), want) {
					t.Errorf("error %q does not mention %q", err, want)
				}
			}
		})
	}
}

func TestModelProfileUnknown(t *testing.T) {
	m := mustLookup(t, "A30-24GB")
	_, err := m.Profile("1g.5gb")
	if err == nil {
		t.Fatal("A30 has no 1g.5gb")
	}
	want := `A30-24GB offers no MIG profile "1g.5gb"; it offers 1g.6gb, 1g.6gb+me, 2g.12gb, 2g.12gb+me, 4g.24gb`
	if diff := cmp.Diff(want, err.Error()); diff != "" {
		t.Errorf("-want +got:\n%s", diff)
	}
}
