package mig

import (
	"testing"
)

func TestMap(t *testing.T) {
	tests := map[string]struct {
		model string
		req   Request
		want  string
	}{
		"A100-80 1g.10gb on H100 NVL":    {"H100-NVL-94GB", Request{Profile: "1g.10gb"}, "1g.12gb"},
		"A100-40 1g.5gb on A100-80":      {"A100-80GB", Request{Profile: "1g.5gb"}, "1g.10gb"},
		"3g.20gb on H200":                {"H200-141GB", Request{Profile: "3g.20gb"}, "3g.71gb"},
		"same model is identity":         {"A100-40GB", Request{Profile: "2g.10gb"}, "2g.10gb"},
		"memory pushes to double 1g":     {"A100-40GB", Request{Profile: "1g.8gb"}, "1g.10gb"},
		"+me kept":                       {"H100-80GB", Request{Profile: "1g.5gb+me"}, "1g.10gb+me"},
		"+me flag":                       {"A30-24GB", Request{Profile: "2g.10gb", MediaExtensions: true}, "2g.12gb+me"},
		"+me falls back to whole GPU":    {"A100-40GB", Request{Profile: "3g.20gb+me"}, "7g.40gb"},
		"H200 1g.18gb on A100-80":        {"A100-80GB", Request{Profile: "1g.18gb"}, "1g.20gb"},
		"4g.40gb on A30":                 {"H100-80GB", Request{Profile: "4g.24gb"}, "4g.40gb"},
		"7g.40gb on H100":                {"H100-80GB", Request{Profile: "7g.40gb"}, "7g.80gb"},
		"B200-style name parses":         {"H200-141GB", Request{Profile: "1g.23gb"}, "1g.35gb"},
		"mib fits plain 1g":              {"A100-80GB", Request{ComputeSlices: 1, MemoryMiB: 9728}, "1g.10gb"},
		"mib one over plain 1g":          {"A100-80GB", Request{ComputeSlices: 1, MemoryMiB: 9729}, "1g.20gb"},
		"10 GiB is more than 1g.10gb":    {"H100-80GB", Request{ComputeSlices: 1, MemoryMiB: 10240}, "1g.20gb"},
		"compute pushes to 2g":           {"A100-40GB", Request{ComputeSlices: 2, MemoryMiB: 1}, "2g.10gb"},
		"compute 3 small memory":         {"H100-NVL-94GB", Request{ComputeSlices: 3}, "3g.47gb"},
		"compute 4 takes 4g not 7g":      {"A100-40GB", Request{ComputeSlices: 4, MemoryMiB: 19968}, "4g.20gb"},
		"compute 3 big memory":           {"A100-40GB", Request{ComputeSlices: 3, MemoryMiB: 30000}, "7g.40gb"},
		"a30 compute 3":                  {"A30-24GB", Request{ComputeSlices: 3}, "4g.24gb"},
		"a30 media mib":                  {"A30-24GB", Request{ComputeSlices: 1, MemoryMiB: 100, MediaExtensions: true}, "1g.6gb+me"},
		"mib on observed H200 sizes":     {"H200-141GB", Request{ComputeSlices: 1, MemoryMiB: 16384}, "1g.18gb"},
		"zero memory means any memory":   {"A30-24GB", Request{ComputeSlices: 2}, "2g.12gb"},
		"large memory small compute gh":  {"H100-96GB", Request{ComputeSlices: 1, MemoryMiB: 20000}, "1g.24gb"},
		"media on the whole GPU":         {"H200-141GB", Request{Profile: "7g.141gb", MediaExtensions: true}, "7g.141gb"},
		"a30 media big memory":           {"A30-24GB", Request{ComputeSlices: 1, MemoryMiB: 12000, MediaExtensions: true}, "4g.24gb"},
		"same GB different model (H100)": {"A100-80GB", Request{Profile: "1g.10gb"}, "1g.10gb"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := mustLookup(t, tc.model).Map(tc.req)
			if err != nil {
				t.Fatal(err)
			}
			if got.Name != tc.want {
				t.Errorf("Map(%+v) on %s = %s, want %s", tc.req, tc.model, got.Name, tc.want)
			}
		})
	}
}

func TestMapErrors(t *testing.T) {
	tests := map[string]struct {
		model string
		req   Request
		want  string
	}{
		"7g.80gb on A30": {"A30-24GB", Request{Profile: "7g.80gb"},
			"A30-24GB offers no MIG profile with at least 7 compute slice(s) and 80 GB (7g.80gb); it offers 1g.6gb, 1g.6gb+me, 2g.12gb, 2g.12gb+me, 4g.24gb"},
		"too much memory": {"A100-40GB", Request{ComputeSlices: 1, MemoryMiB: 50000},
			"A100-40GB offers no MIG profile with at least 1 compute slice(s) and 50000 MiB; it offers 1g.5gb, 1g.5gb+me, 1g.10gb, 2g.10gb, 3g.20gb, 4g.20gb, 7g.40gb"},
		"bad name":      {"A30-24GB", Request{Profile: "big"}, `invalid MIG profile name "big"`},
		"no compute":    {"A30-24GB", Request{MemoryMiB: 10}, "MIG request needs at least 1 compute slice, got 0"},
		"negative mem":  {"A30-24GB", Request{ComputeSlices: 1, MemoryMiB: -1}, "MIG request memory -1 MiB is negative"},
		"8 compute":     {"H100-80GB", Request{ComputeSlices: 8}, "H100-80GB offers no MIG profile with at least 8 compute slice(s) and 0 MiB"},
		"media too big": {"A30-24GB", Request{ComputeSlices: 1, MemoryMiB: 30000, MediaExtensions: true}, "1 compute slice(s) and 30000 MiB with media extensions"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := mustLookup(t, tc.model).Map(tc.req)
			if err == nil || !contains(err.Error(), tc.want) {
				t.Errorf("Map(%+v) = %v, %v; want error containing %q", tc.req, got.Name, err, tc.want)
			}
		})
	}
}
