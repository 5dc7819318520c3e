package mig

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// bruteForce tries every assignment of the requested profiles to (GPU, start)
// and returns the cheapest total cost. Its validity check is written from the
// catalog fields, independently of gpuState.fits.
func bruteForce(m *Model, existing [][]Instance, req []string) (Cost, bool) {
	layouts := make([][]Instance, len(existing))
	for g := range existing {
		layouts[g] = slices.Clone(existing[g])
	}
	slices.Sort(req) // identical items are then adjacent: see symmetry cut below
	best, found := Cost{}, false
	var rec func(i, minPos int)
	rec = func(i, minPos int) {
		if i == len(req) {
			var c Cost
			for _, l := range layouts {
				lc, err := m.Fragmentation(l)
				if err != nil {
					panic(err)
				}
				c = c.Plus(lc)
			}
			if !found || c.Less(best) {
				best, found = c, true
			}
			return
		}
		p, _ := m.Profile(req[i])
		for g := range layouts {
			for _, st := range p.Starts {
				pos := g*16 + st
				if pos < minPos {
					continue // same profile as the previous item: only ascending positions
				}
				if !bruteValid(m, append(layouts[g], Instance{p.Name, st})) {
					continue
				}
				old := layouts[g]
				layouts[g] = append(slices.Clone(old), Instance{p.Name, st})
				next := 0
				if i+1 < len(req) && req[i+1] == req[i] {
					next = pos + 1
				}
				rec(i+1, next)
				layouts[g] = old
			}
		}
	}
	rec(0, 0)
	return best, found
}

func bruteValid(m *Model, l []Instance) bool {
	var used [8]bool
	count := map[string]int{}
	media, compute := 0, 0
	for _, in := range l {
		p, err := m.Profile(in.Profile)
		if err != nil || !slices.Contains(p.Starts, in.Start) {
			return false
		}
		for s := in.Start; s < in.Start+p.MemorySlots; s++ {
			if s >= m.Slots || used[s] {
				return false
			}
			used[s] = true
		}
		count[p.Name]++
		if count[p.Name] > p.MaxInstances {
			return false
		}
		if p.MediaExtensions {
			media++
		}
		compute += p.ComputeSlices
	}
	return media <= 1 && compute <= m.ComputeSlices
}

// multisets lists every multiset of size 1..k over names.
func multisets(names []string, k int) [][]string {
	var out [][]string
	var rec func(from int, cur []string)
	rec = func(from int, cur []string) {
		if len(cur) > 0 {
			out = append(out, slices.Clone(cur))
		}
		if len(cur) == k {
			return
		}
		for i := from; i < len(names); i++ {
			rec(i, append(cur, names[i]))
		}
	}
	rec(0, nil)
	return out
}

// checkPlan verifies a plan independently: valid layouts, existing instances
// kept, exactly the requested profiles added, and the reported cost.
func checkPlan(t *testing.T, m *Model, existing [][]Instance, req []string, plan Plan) {
	t.Helper()
	if len(plan.Layouts) != len(existing) {
		t.Fatalf("plan has %d GPUs, want %d", len(plan.Layouts), len(existing))
	}
	var cost Cost
	var added []string
	for g, l := range plan.Layouts {
		if !bruteValid(m, l) {
			t.Errorf("GPU %d layout %v is invalid", g, l)
		}
		for _, in := range existing[g] {
			if !slices.Contains(l, in) {
				t.Errorf("GPU %d lost existing %v", g, in)
			}
		}
		c, err := m.Fragmentation(l)
		if err != nil {
			t.Fatal(err)
		}
		cost = cost.Plus(c)
	}
	for _, a := range plan.Added {
		if !slices.Contains(plan.Layouts[a.GPU], a.Instance) {
			t.Errorf("added %v missing from layout of GPU %d", a.Instance, a.GPU)
		}
		added = append(added, a.Profile)
	}
	slices.Sort(added)
	want := slices.Sorted(slices.Values(req))
	if diff := cmp.Diff(want, added); diff != "" {
		t.Errorf("added profiles -want +got:\n%s", diff)
	}
	if diff := cmp.Diff(cost, plan.Cost); diff != "" {
		t.Errorf("reported cost -recomputed +reported:\n%s", diff)
	}
}

// TestPackMatchesBruteForce compares the exact packer with exhaustive search
// on every multiset up to a size, on several GPU setups per model.
func TestPackMatchesBruteForce(t *testing.T) {
	type setup struct {
		name     string
		existing [][]string
	}
	tests := map[string]struct {
		maxItems int
		setups   []setup
	}{
		"A100-40GB": {maxItems: 4, setups: []setup{
			{"one empty GPU", [][]string{nil}},
			{"two empty GPUs", [][]string{nil, nil}},
			{"3g@4 then empty", [][]string{{"3g.20gb@4"}, nil}},
			{"1g@6 and 2g@0,2", [][]string{{"1g.5gb@6"}, {"2g.10gb@0", "2g.10gb@2"}}},
		}},
		"H100-NVL-94GB": {maxItems: 3, setups: []setup{
			{"two empty GPUs", [][]string{nil, nil}},
			{"+me used", [][]string{{"1g.12gb+me@3"}, nil}},
		}},
		"A30-24GB": {maxItems: 5, setups: []setup{
			{"one empty GPU", [][]string{nil}},
			{"two empty GPUs", [][]string{nil, nil}},
			{"three empty GPUs", [][]string{nil, nil, nil}},
			{"1g@1 then empty", [][]string{{"1g.6gb@1"}, nil}},
		}},
	}
	for model, tc := range tests {
		m := mustLookup(t, model)
		var names []string
		for _, p := range m.Profiles {
			names = append(names, p.Name)
		}
		maxItems := tc.maxItems
		if testing.Short() {
			maxItems = min(maxItems, 3)
		}
		for _, su := range tc.setups {
			t.Run(model+"/"+su.name, func(t *testing.T) {
				existing := make([][]Instance, len(su.existing))
				for g, specs := range su.existing {
					existing[g] = layoutOf(t, specs...)
				}
				checked, infeasible := 0, 0
				for _, req := range multisets(names, maxItems) {
					want, ok := bruteForce(m, existing, slices.Clone(req))
					plan, err := m.Pack(existing, req)
					if !ok {
						infeasible++
						if err == nil {
							t.Errorf("%v: Pack found %v, brute force found nothing", req, plan.Layouts)
						}
						continue
					}
					if err != nil {
						t.Errorf("%v: %v (brute force: %+v)", req, err, want)
						continue
					}
					if !plan.Optimal {
						t.Errorf("%v: plan not marked optimal", req)
					}
					if diff := cmp.Diff(want, plan.Cost); diff != "" {
						t.Errorf("%v: cost -brute +pack:\n%s\nlayouts %v", req, diff, plan.Layouts)
					}
					checkPlan(t, m, existing, req, plan)
					checked++
				}
				t.Logf("%d feasible multisets matched brute force, %d infeasible agreed", checked, infeasible)
			})
		}
	}
}

func TestPack(t *testing.T) {
	tests := map[string]struct {
		model    string
		existing [][]string
		request  []string
		want     [][]string // final layouts as profile@start
		wantCost Cost
	}{
		"4g and 3g share one GPU": {
			model: "A100-40GB", existing: [][]string{nil, nil},
			request:  []string{"3g.20gb", "4g.20gb"},
			want:     [][]string{{"4g.20gb@0", "3g.20gb@4"}, nil},
			wantCost: Cost{GPUs: 1},
		},
		"fill the partly used GPU first": {
			model: "A100-80GB", existing: [][]string{nil, {"4g.40gb@0"}},
			request:  []string{"3g.40gb"},
			want:     [][]string{nil, {"4g.40gb@0", "3g.40gb@4"}},
			wantCost: Cost{GPUs: 1},
		},
		"double 1g, 2g and 3g fill one GPU": {
			model: "H100-80GB", existing: [][]string{nil, nil},
			request:  []string{"3g.40gb", "2g.20gb", "1g.20gb"},
			want:     [][]string{{"1g.20gb@0", "2g.20gb@2", "3g.40gb@4"}, nil},
			wantCost: Cost{GPUs: 1},
		},
		"balanced A100 layout": {
			model: "A100-40GB", existing: [][]string{nil},
			request:  []string{"1g.5gb", "1g.5gb", "2g.10gb", "3g.20gb"},
			want:     [][]string{{"1g.5gb@0", "1g.5gb@1", "2g.10gb@2", "3g.20gb@4"}},
			wantCost: Cost{GPUs: 1},
		},
		"1g placed to keep a 3g block free": {
			model: "A100-40GB", existing: [][]string{nil},
			request:  []string{"1g.5gb", "1g.5gb", "2g.10gb"},
			want:     [][]string{{"1g.5gb@0", "1g.5gb@1", "2g.10gb@2"}},
			wantCost: Cost{GPUs: 1, Spread: -16},
		},
		"a30 full": {
			model: "A30-24GB", existing: [][]string{nil, nil},
			request:  []string{"2g.12gb", "1g.6gb", "1g.6gb+me", "4g.24gb"},
			want:     [][]string{{"4g.24gb@0"}, {"1g.6gb@0", "1g.6gb+me@1", "2g.12gb@2"}},
			wantCost: Cost{GPUs: 2},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			m := mustLookup(t, tc.model)
			existing := make([][]Instance, len(tc.existing))
			for g, s := range tc.existing {
				existing[g] = layoutOf(t, s...)
			}
			plan, err := m.Pack(existing, tc.request)
			if err != nil {
				t.Fatal(err)
			}
			var got [][]string
			for _, l := range plan.Layouts {
				var specs []string
				for _, in := range l {
					specs = append(specs, fmt.Sprintf("%s@%d", in.Profile, in.Start))
				}
				got = append(got, specs)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("layouts -want +got:\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantCost, plan.Cost); diff != "" {
				t.Errorf("cost -want +got:\n%s", diff)
			}
			checkPlan(t, m, existing, tc.request, plan)
		})
	}
}

func TestPackErrors(t *testing.T) {
	tests := map[string]struct {
		model    string
		gpus     int
		existing [][]string
		request  []string
		want     string
	}{
		"too many 7g": {model: "A100-40GB", gpus: 3, request: []string{"7g.40gb", "7g.40gb", "7g.40gb", "7g.40gb", "1g.5gb"},
			want: "[1×1g.5gb 4×7g.40gb] does not fit on 3 A100-40GB GPU(s): left over [1×1g.5gb 1×7g.40gb]"},
		"second +me needs a second GPU": {model: "A100-80GB", gpus: 1, request: []string{"1g.10gb+me", "1g.10gb+me"},
			want: "left over [1×1g.10gb+me]"},
		"existing instances leave no room": {model: "A30-24GB", existing: [][]string{{"2g.12gb@0"}}, request: []string{"2g.12gb", "1g.6gb"},
			want: "[1×1g.6gb 1×2g.12gb] does not fit on 1 A30-24GB GPU(s): left over [1×1g.6gb]"},
		"no GPUs":          {model: "A30-24GB", request: []string{"1g.6gb"}, want: "left over [1×1g.6gb]"},
		"unknown profile":  {model: "A30-24GB", gpus: 1, request: []string{"1g.5gb"}, want: `A30-24GB offers no MIG profile "1g.5gb"`},
		"invalid existing": {model: "A30-24GB", existing: [][]string{nil, {"4g.24gb@2"}}, request: []string{"1g.6gb"}, want: "GPU 1: 4g.24gb at start 2"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			m := mustLookup(t, tc.model)
			existing := make([][]Instance, tc.gpus)
			for _, s := range tc.existing {
				existing = append(existing, layoutOf(t, s...))
			}
			_, err := m.Pack(existing, tc.request)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Pack() error = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

// Beyond MaxSearchStates the packer falls back to a greedy layout; it must
// still be valid and say it is not proven optimal.
func TestPackGreedyFallback(t *testing.T) {
	m := mustLookup(t, "A100-40GB")
	var req []string
	for _, p := range m.Profiles {
		for range 8 {
			req = append(req, p.Name)
		}
	} // 9^7 states > MaxSearchStates
	existing := make([][]Instance, 40)
	existing[3] = layoutOf(t, "1g.5gb@6")
	plan, err := m.Pack(existing, req)
	if err != nil {
		t.Fatal(err)
	}
	if plan.Optimal {
		t.Error("greedy plan marked optimal")
	}
	checkPlan(t, m, existing, req, plan)
	// Lower bound: memory slots and the 4g/7g that each need slot 0.
	if plan.Cost.GPUs > 2*ceilDiv(slotsOf(m, req), 8) {
		t.Errorf("greedy used %d GPUs for %d slots", plan.Cost.GPUs, slotsOf(m, req))
	}
}

// A realistic pool plan is solved exactly and quickly.
func TestPackLargeExact(t *testing.T) {
	m := mustLookup(t, "H100-80GB")
	var req []string
	add := func(n int, p string) {
		for range n {
			req = append(req, p)
		}
	}
	add(40, "1g.10gb")
	add(9, "2g.20gb")
	add(10, "3g.40gb")
	add(3, "7g.80gb")
	plan, err := m.Pack(make([][]Instance, 20), req)
	if err != nil {
		t.Fatal(err)
	}
	if !plan.Optimal {
		t.Fatal("expected an exact plan")
	}
	checkPlan(t, m, make([][]Instance, 20), req, plan)
	// 40 + 18 + 40 + 24 = 122 slots -> at least 16 GPUs; 1g can't use slot 7.
	if lb := ceilDiv(slotsOf(m, req), 8); plan.Cost.GPUs < lb {
		t.Errorf("plan uses %d GPUs, below the lower bound %d", plan.Cost.GPUs, lb)
	}
	t.Logf("cost %+v", plan.Cost)
}

func slotsOf(m *Model, req []string) int {
	n := 0
	for _, r := range req {
		p, _ := m.Profile(r)
		n += p.MemorySlots
	}
	return n
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }

func TestPackEmptyRequestKeepsExisting(t *testing.T) {
	m := mustLookup(t, "A30-24GB")
	existing := [][]Instance{layoutOf(t, "2g.12gb@2"), nil}
	plan, err := m.Pack(existing, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := Plan{Layouts: [][]Instance{layoutOf(t, "2g.12gb@2"), nil}, Cost: Cost{GPUs: 1, Spread: -4}, Optimal: true}
	if diff := cmp.Diff(want, plan); diff != "" {
		t.Errorf("-want +got:\n%s", diff)
	}
}
