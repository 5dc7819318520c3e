package mig

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseProfileName(t *testing.T) {
	tests := map[string]struct {
		in      string
		want    ProfileName
		wantErr bool
	}{
		"plain":            {in: "1g.10gb", want: ProfileName{ComputeSlices: 1, MemoryGB: 10}},
		"media":            {in: "1g.5gb+me", want: ProfileName{ComputeSlices: 1, MemoryGB: 5, MediaExtensions: true}},
		"big":              {in: "7g.141gb", want: ProfileName{ComputeSlices: 7, MemoryGB: 141}},
		"nvml prefix":      {in: "MIG 3g.40gb", want: ProfileName{ComputeSlices: 3, MemoryGB: 40}},
		"resource form":    {in: "1g.10gb.me", wantErr: true},
		"missing gb":       {in: "1g.10", wantErr: true},
		"zero slices":      {in: "0g.10gb", wantErr: true},
		"leading zero":     {in: "1g.05gb", wantErr: true},
		"negative":         {in: "-1g.5gb", wantErr: true},
		"compute instance": {in: "1c.2g.12gb", wantErr: true},
		"empty":            {in: "", wantErr: true},
		"upper case":       {in: "1G.10GB", wantErr: true},
		"trailing junk":    {in: "1g.10gb+mex", wantErr: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := ParseProfileName(tc.in)
			if tc.wantErr {
				if err == nil {
					t.Fatalf("ParseProfileName(%q) = %v, want error", tc.in, got)
				}
				if !contains(err.Error(), tc.in) {
					t.Errorf("error %q does not name the value %q", err, tc.in)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("-want +got:\n%s", diff)
			}
		})
	}
}

func TestResourceNames(t *testing.T) {
	tests := map[string]struct {
		profile, resource string
	}{
		"plain":    {profile: "1g.10gb", resource: "nvidia.com/mig-1g.10gb"},
		"media":    {profile: "1g.10gb+me", resource: "nvidia.com/mig-1g.10gb.me"},
		"a30 2g":   {profile: "2g.12gb+me", resource: "nvidia.com/mig-2g.12gb.me"},
		"h200 big": {profile: "7g.141gb", resource: "nvidia.com/mig-7g.141gb"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := ResourceName(tc.profile); got != tc.resource {
				t.Errorf("ResourceName(%q) = %q, want %q", tc.profile, got, tc.resource)
			}
			n, err := ParseResourceName(tc.resource)
			if err != nil {
				t.Fatal(err)
			}
			if got := n.String(); got != tc.profile {
				t.Errorf("ParseResourceName(%q) = %q, want %q", tc.resource, got, tc.profile)
			}
		})
	}
}

func TestParseResourceNameErrors(t *testing.T) {
	for name, in := range map[string]string{
		"whole gpu":      "nvidia.com/gpu",
		"no prefix":      "mig-1g.10gb",
		"plus sign":      "nvidia.com/mig-1g.10gb+me",
		"bad profile":    "nvidia.com/mig-1g",
		"nvml prefix":    "nvidia.com/mig-MIG 1g.10gb",
		"double me":      "nvidia.com/mig-1g.10gb.me.me",
		"other vendor":   "amd.com/mig-1g.10gb",
		"empty":          "",
		"only prefix":    "nvidia.com/mig-",
		"shared gpu":     "nvidia.com/gpu.shared",
		"trailing dot":   "nvidia.com/mig-1g.10gb.",
		"me without gb":  "nvidia.com/mig-1g.me",
		"zero memory":    "nvidia.com/mig-1g.0gb",
		"spaces":         "nvidia.com/mig- 1g.10gb",
		"upper case ext": "nvidia.com/mig-1g.10gb.ME",
	} {
		t.Run(name, func(t *testing.T) {
			got, err := ParseResourceName(in)
			if err == nil {
				t.Fatalf("ParseResourceName(%q) = %v, want error", in, got)
			}
			if !contains(err.Error(), in) {
				t.Errorf("error %q does not name the value %q", err, in)
			}
		})
	}
}
