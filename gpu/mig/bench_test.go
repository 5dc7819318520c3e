package mig

import (
	"math/rand/v2"
	"testing"
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
