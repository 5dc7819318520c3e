package mig

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// BenchmarkPlace is one placement decision on a partly used GPU.
func BenchmarkPlace(b *testing.B) {
	m := mustLookup(b, "A100-40GB")
	existing := layoutOf(b, "1g.5gb@0", "2g.10gb@2", "3g.20gb@4")
	for b.Loop() {
		if _, err := m.Place(existing, "1g.5gb"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPackOneOnNode is the syncer's per-pod decision: one profile onto a
// node of 8 partly used GPUs, exactly.
func BenchmarkPackOneOnNode(b *testing.B) {
	m := mustLookup(b, "H100-80GB")
	existing := [][]Instance{
		layoutOf(b, "3g.40gb@0"), layoutOf(b, "1g.10gb@0", "1g.10gb@1"), nil, layoutOf(b, "7g.80gb@0"),
		layoutOf(b, "2g.20gb@0", "2g.20gb@2", "2g.20gb@4"), nil, layoutOf(b, "4g.40gb@0"), layoutOf(b, "1g.20gb@6"),
	}
	for b.Loop() {
		if _, err := m.Pack(existing, []string{"2g.20gb"}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPackPool plans a seeded random mix of 60 instances over 20 GPUs and
// reports GPUs used against the slot lower bound ceil(slots/8).
func BenchmarkPackPool(b *testing.B) {
	m := mustLookup(b, "A100-80GB")
	rng := rand.New(rand.NewPCG(1, 2))
	names := []string{"1g.10gb", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"}
	weights := []int{10, 3, 5, 4, 1, 1}
	var req []string
	for len(req) < 60 {
		i := rng.IntN(len(names))
		if rng.IntN(10) < weights[i] {
			req = append(req, names[i])
		}
	}
	var plan Plan
	for b.Loop() {
		var err error
		if plan, err = m.Pack(make([][]Instance, 40), req); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(plan.Cost.GPUs)/float64(ceilDiv(slotsOf(m, req), 8)), "gpus/lowerbound")
	b.ReportMetric(float64(plan.Cost.Stranded), "stranded-slots")
}

// BenchmarkPackVsExhaustive compares Pack with an exhaustive search (the
// test's bruteForce) on seeded random cases: two A100-40GB GPUs, the first
// partly used, 1–4 requested instances. It reports the share of feasible
// cases where Pack's cost equals the exhaustive optimum (1 = always optimal),
// both searches' time per case and, for the greedy fallback Pack uses past
// MaxSearchStates, its GPUs against the optimum's.
func BenchmarkPackVsExhaustive(b *testing.B) {
	m := mustLookup(b, "A100-40GB")
	var names []string
	for _, p := range m.Profiles {
		names = append(names, p.Name)
	}
	type tcase struct {
		existing [][]Instance
		req      []string
	}
	rng := rand.New(rand.NewPCG(5, 8))
	var cases []tcase
	for len(cases) < 60 {
		first := []Instance{}
		for range rng.IntN(3) {
			if in, err := m.Place(first, names[rng.IntN(len(names))]); err == nil {
				first = append(first, in)
			}
		}
		req := make([]string, 1+rng.IntN(4))
		for i := range req {
			req[i] = names[rng.IntN(len(names))]
		}
		cases = append(cases, tcase{[][]Instance{first, nil}, req})
	}
	var optimal, feasible, greedyGPUs, exactGPUs int
	var packTime, bruteTime time.Duration
	for b.Loop() {
		optimal, feasible, greedyGPUs, exactGPUs = 0, 0, 0, 0
		packTime, bruteTime = 0, 0
		for _, c := range cases {
			t0 := time.Now()
			plan, err := m.Pack(c.existing, c.req)
			t1 := time.Now()
			want, ok := bruteForce(m, c.existing, slices.Clone(c.req))
			bruteTime += time.Since(t1)
			packTime += t1.Sub(t0)
			if !ok {
				if err == nil {
					b.Fatalf("%v on %v: Pack found a plan, exhaustive search none", c.req, c.existing)
				}
				continue
			}
			feasible++
			if err == nil && plan.Cost == want {
				optimal++
			}
			p, err := m.newPacker(c.existing, c.req)
			if err != nil {
				b.Fatal(err)
			}
			if g, err := p.greedy(); err == nil {
				greedyGPUs += g.Cost.GPUs
				exactGPUs += want.GPUs
			}
		}
	}
	b.ReportMetric(float64(feasible), "feasible-cases")
	b.ReportMetric(float64(optimal)/float64(feasible), "optimal-share")
	b.ReportMetric(float64(packTime.Microseconds())/float64(len(cases)), "pack-us/case")
	b.ReportMetric(float64(bruteTime.Microseconds())/float64(len(cases)), "exhaustive-us/case")
	b.ReportMetric(float64(greedyGPUs)/float64(exactGPUs), "greedy-gpus/optimum")
}
