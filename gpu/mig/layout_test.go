package mig

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestStartsOnEmptyGPU(t *testing.T) {
	for _, m := range Models() {
		for _, p := range m.Profiles {
			got, err := m.Starts(nil, p.Name)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(p.Starts, got); diff != "" {
				t.Errorf("%s %s: -want +got:\n%s", m.Name, p.Name, diff)
			}
		}
	}
}

func TestStarts(t *testing.T) {
	tests := map[string]struct {
		model    string
		existing []string
		profile  string
		want     []int
	}{
		"1g beside 3g":                 {"A100-40GB", []string{"3g.20gb@0"}, "1g.5gb", []int{4, 5, 6}},
		"3g beside 4g":                 {"A100-40GB", []string{"4g.20gb@0"}, "3g.20gb", []int{4}},
		"4g blocked by 1g":             {"A100-40GB", []string{"1g.5gb@3"}, "4g.20gb", nil},
		"2g around 1g":                 {"A100-40GB", []string{"1g.5gb@2"}, "2g.10gb", []int{0, 4}},
		"double 1g takes slot 7":       {"A100-40GB", []string{"3g.20gb@0", "2g.10gb@4"}, "1g.10gb", []int{6}},
		"plain 1g cannot use slot 7":   {"A100-40GB", []string{"3g.20gb@0", "2g.10gb@4", "1g.5gb@6"}, "1g.5gb", nil},
		"second +me refused":           {"A100-80GB", []string{"1g.10gb+me@0"}, "1g.10gb+me", nil},
		"plain 1g next to +me":         {"A100-80GB", []string{"1g.10gb+me@0"}, "1g.10gb", []int{1, 2, 3, 4, 5, 6}},
		"7g needs an empty GPU":        {"H100-80GB", []string{"1g.10gb@6"}, "7g.80gb", nil},
		"seventh 1g":                   {"H100-NVL-94GB", []string{"1g.12gb@0", "1g.12gb@1", "1g.12gb@2", "1g.12gb@3", "1g.12gb@4", "1g.12gb@5"}, "1g.12gb", []int{6}},
		"eighth 1g":                    {"H100-NVL-94GB", []string{"1g.12gb@0", "1g.12gb@1", "1g.12gb@2", "1g.12gb@3", "1g.12gb@4", "1g.12gb@5", "1g.12gb@6"}, "1g.12gb", nil},
		"two 3g":                       {"H200-141GB", []string{"3g.71gb@4"}, "3g.71gb", []int{0}},
		"4g only at 0":                 {"H200-141GB", []string{"3g.71gb@0"}, "4g.71gb", nil},
		"a30 1g beside 2g":             {"A30-24GB", []string{"2g.12gb@0"}, "1g.6gb", []int{2, 3}},
		"a30 2g+me beside 2g":          {"A30-24GB", []string{"2g.12gb@0"}, "2g.12gb+me", []int{2}},
		"a30 media engines are one":    {"A30-24GB", []string{"1g.6gb+me@0"}, "2g.12gb+me", nil},
		"a30 4g needs an empty GPU":    {"A30-24GB", []string{"1g.6gb@3"}, "4g.24gb", nil},
		"a30 third 2g":                 {"A30-24GB", []string{"2g.12gb@0"}, "2g.12gb", []int{2}},
		"gh200 double 1g around 2g":    {"H100-96GB", []string{"2g.24gb@2"}, "1g.24gb", []int{0, 4, 6}},
		"a100-80 3g after two 2g":      {"A100-80GB", []string{"2g.20gb@0", "2g.20gb@2"}, "3g.40gb", []int{4}},
		"a100-40 second 4g impossible": {"A100-40GB", []string{"4g.20gb@0"}, "4g.20gb", nil},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			m := mustLookup(t, tc.model)
			got, err := m.Starts(layoutOf(t, tc.existing...), tc.profile)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("-want +got:\n%s", diff)
			}
		})
	}
}

func TestValidateErrors(t *testing.T) {
	tests := map[string]struct {
		model    string
		existing []string
		want     string
	}{
		"bad start":     {"A100-40GB", []string{"3g.20gb@2"}, "3g.20gb at start 2 on A100-40GB: start 2 is not allowed (allowed: [0 4])"},
		"overlap":       {"A100-40GB", []string{"3g.20gb@0", "2g.10gb@2"}, "2g.10gb at start 2 on A100-40GB: slots 2-3 overlap another instance"},
		"slot 7 for 1g": {"A100-80GB", []string{"1g.10gb@7"}, "1g.10gb at start 7 on A100-80GB: start 7 is not allowed (allowed: [0 1 2 3 4 5 6])"},
		"two +me":       {"A30-24GB", []string{"1g.6gb+me@0", "2g.12gb+me@2"}, "2g.12gb+me at start 2 on A30-24GB: at most 1 +me instance(s) per GPU"},
		"unknown":       {"A30-24GB", []string{"1g.5gb@0"}, `A30-24GB offers no MIG profile "1g.5gb"`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			m := mustLookup(t, tc.model)
			err := m.Validate(layoutOf(t, tc.existing...))
			if err == nil || !contains(err.Error(), tc.want) {
				t.Errorf("Validate() = %v, want error containing %q", err, tc.want)
			}
		})
	}
}

func TestFragmentation(t *testing.T) {
	tests := map[string]struct {
		model    string
		existing []string
		want     Cost
	}{
		"empty GPU costs nothing": {"A100-40GB", nil, Cost{}},
		"seven 1g strand slot 7": {"A100-40GB", []string{"1g.5gb@0", "1g.5gb@1", "1g.5gb@2", "1g.5gb@3", "1g.5gb@4", "1g.5gb@5", "1g.5gb@6"},
			Cost{GPUs: 1, Stranded: 1}},
		"two 3g fill the GPU":      {"A100-40GB", []string{"3g.20gb@0", "3g.20gb@4"}, Cost{GPUs: 1}},
		"4g and three 1g strand 7": {"A100-40GB", []string{"4g.20gb@0", "1g.5gb@4", "1g.5gb@5", "1g.5gb@6"}, Cost{GPUs: 1, Stranded: 1}},
		"three 2g leave a double":  {"H100-80GB", []string{"2g.20gb@0", "2g.20gb@2", "2g.20gb@4"}, Cost{GPUs: 1, Spread: -4}},
		"one 1g keeps a 3g block":  {"H100-80GB", []string{"1g.10gb@0"}, Cost{GPUs: 1, Spread: -16}},
		"1g at 6 strands slot 7":   {"H100-80GB", []string{"1g.10gb@6"}, Cost{GPUs: 1, Stranded: 1, Spread: -16}},
		"7g is full":               {"H200-141GB", []string{"7g.141gb@0"}, Cost{GPUs: 1}},
		"a30 three 1g":             {"A30-24GB", []string{"1g.6gb@0", "1g.6gb@1", "1g.6gb@2"}, Cost{GPUs: 1, Spread: -1}},
		"a30 1g at 1 keeps 2g@2":   {"A30-24GB", []string{"1g.6gb@1"}, Cost{GPUs: 1, Spread: -4}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := mustLookup(t, tc.model).Fragmentation(layoutOf(t, tc.existing...))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("-want +got:\n%s", diff)
			}
		})
	}
}

func TestPlace(t *testing.T) {
	tests := map[string]struct {
		model    string
		existing []string
		profile  string
		want     Instance
		wantErr  string
	}{
		"first 1g at 0":             {model: "A100-40GB", profile: "1g.5gb", want: Instance{"1g.5gb", 0}},
		"2g keeps the 3g block":     {model: "A100-40GB", existing: []string{"2g.10gb@0"}, profile: "2g.10gb", want: Instance{"2g.10gb", 2}},
		"avoid stranding slot 7":    {model: "A100-80GB", existing: []string{"3g.40gb@0"}, profile: "1g.10gb", want: Instance{"1g.10gb", 4}},
		"only slot 6 left":          {model: "A100-80GB", existing: []string{"3g.40gb@0", "2g.20gb@4"}, profile: "1g.10gb", want: Instance{"1g.10gb", 6}},
		"a30 keeps a 2g slot":       {model: "A30-24GB", existing: []string{"1g.6gb@0"}, profile: "1g.6gb", want: Instance{"1g.6gb", 1}},
		"full GPU":                  {model: "A30-24GB", existing: []string{"4g.24gb@0"}, profile: "1g.6gb", wantErr: "1g.6gb does not fit on this A30-24GB GPU"},
		"unknown profile":           {model: "A30-24GB", profile: "3g.20gb", wantErr: `A30-24GB offers no MIG profile "3g.20gb"`},
		"invalid existing instance": {model: "A30-24GB", existing: []string{"2g.12gb@1"}, profile: "1g.6gb", wantErr: "2g.12gb at start 1"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := mustLookup(t, tc.model).Place(layoutOf(t, tc.existing...), tc.profile)
			if tc.wantErr != "" {
				if err == nil || !contains(err.Error(), tc.wantErr) {
					t.Fatalf("Place() = %v, %v; want error containing %q", got, err, tc.wantErr)
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
