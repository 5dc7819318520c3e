package share

import (
	"cmp"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// mix is a seeded workload generator: fractions drawn with weights, plus
// some gpu-memory requests on 80 GB GPUs.
type mix struct {
	fractions []float64
	weights   []int
	memory    int // percent of requests that are gpu-memory
}

var mixes = map[string]mix{
	"small":  {fractions: []float64{0.05, 0.1, 0.125, 0.2, 0.25, 0.3}, weights: []int{2, 4, 2, 3, 3, 1}},
	"mixed":  {fractions: []float64{0.1, 0.2, 0.25, 0.3, 0.5, 0.6, 0.75}, weights: []int{3, 3, 3, 2, 3, 1, 1}, memory: 20},
	"halves": {fractions: []float64{0.25, 0.5, 0.55, 0.7}, weights: []int{2, 3, 2, 1}},
}

func (m mix) draw(rng *rand.Rand) Request {
	if rng.IntN(100) < m.memory {
		return Memory(int64(1024 * (1 + rng.IntN(40))))
	}
	total := 0
	for _, w := range m.weights {
		total += w
	}
	n := rng.IntN(total)
	for i, w := range m.weights {
		if n < w {
			return Fraction(m.fractions[i])
		}
		n -= w
	}
	panic("unreachable")
}

// packAll is the static case: all requests known, placed largest first, a
// new GPU added whenever none fits. It returns GPUs used and the lower bound.
func packAll(tb testing.TB, reqs []Request) (int, int) {
	type item struct {
		key   string
		r     Request
		units int
	}
	items := make([]item, len(reqs))
	var all []int
	for i, r := range reqs {
		u, err := r.Units(gib80)
		if err != nil {
			tb.Fatal(err)
		}
		items[i] = item{fmt.Sprintf("p%05d", i), r, u}
		all = append(all, u)
	}
	slices.SortStableFunc(items, func(x, y item) int { return cmp.Compare(y.units, x.units) })
	a, _ := New()
	for _, it := range items {
		if _, err := a.Allocate(it.key, it.r); errors.Is(err, ErrNoFit) {
			if err := a.AddGPU(GPU{ID: fmt.Sprintf("gpu-%05d", len(a.GPUs())), MemoryMiB: gib80}); err != nil {
				tb.Fatal(err)
			}
			if _, err := a.Allocate(it.key, it.r); err != nil {
				tb.Fatal(err)
			}
		} else if err != nil {
			tb.Fatal(err)
		}
	}
	return a.InUse(), LowerBound(all...)
}

// boundL2 is Martello and Toth's L2 bin-packing bound: tighter than
// ceil(sum) when many items exceed half a GPU (they cannot share).
func boundL2(units []int) int {
	const c = UnitsPerGPU
	best := LowerBound(units...)
	for _, alpha := range append([]int{0}, units...) {
		if alpha > c/2 {
			continue
		}
		n1, n2, sum2, sum3 := 0, 0, 0, 0
		for _, u := range units {
			switch {
			case u > c-alpha:
				n1++
			case u > c/2:
				n2++
				sum2 += u
			case u >= alpha:
				sum3 += u
			}
		}
		extra := max(0, (sum3-(n2*c-sum2)+c-1)/c)
		best = max(best, n1+n2+extra)
	}
	return best
}

// BenchmarkStaticPacking reports GPUs used / ceil(sum of fractions) for
// seeded mixes of 1000 requests packed largest-first (target <= 1.05).
func BenchmarkStaticPacking(b *testing.B) {
	for _, name := range []string{"small", "mixed", "halves"} {
		b.Run(name, func(b *testing.B) {
			rng := rand.New(rand.NewPCG(42, 1))
			reqs := make([]Request, 1000)
			for i := range reqs {
				reqs[i] = mixes[name].draw(rng)
			}
			var used, lb int
			for b.Loop() {
				used, lb = packAll(b, reqs)
			}
			var units []int
			for _, r := range reqs {
				u, _ := r.Units(gib80)
				units = append(units, u)
			}
			b.ReportMetric(float64(used)/float64(lb), "gpus/lowerbound")
			b.ReportMetric(float64(used)/float64(boundL2(units)), "gpus/L2bound")
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(reqs)), "ns/decision")
		})
	}
}

// BenchmarkOnlineChurn: requests arrive and leave at random (seeded); GPUs
// are never compacted. Reports the mean of GPUs in use / lower bound sampled
// after warm-up, and the worst sample, against ceil(Σ) and against the
// Martello–Toth L2 bound of the live requests (tighter: requests over half a
// GPU cannot share, whatever the placement).
func BenchmarkOnlineChurn(b *testing.B) {
	var r churnRatios
	for b.Loop() {
		r = churn(b, mixes["mixed"], 20000, 300)
	}
	b.ReportMetric(r.mean, "gpus/lowerbound")
	b.ReportMetric(r.worst, "worst-gpus/lowerbound")
	b.ReportMetric(r.meanL2, "gpus/L2bound")
	b.ReportMetric(r.worstL2, "worst-gpus/L2bound")
}

type churnRatios struct{ mean, worst, meanL2, worstL2 float64 }

func churn(tb testing.TB, m mix, steps, population int) churnRatios {
	rng := rand.New(rand.NewPCG(7, 9))
	a, _ := New()
	var live []string
	units := map[string]int{}
	var r churnRatios
	samples := 0
	for step := range steps {
		if len(live) >= population || (len(live) > 0 && rng.IntN(2) == 0) {
			i := rng.IntN(len(live))
			a.Release(live[i])
			delete(units, live[i])
			live[i] = live[len(live)-1]
			live = live[:len(live)-1]
		} else {
			key := fmt.Sprintf("p%d", step)
			req := m.draw(rng)
			if _, err := a.Allocate(key, req); errors.Is(err, ErrNoFit) {
				if err := a.AddGPU(GPU{ID: fmt.Sprintf("gpu-%05d", len(a.GPUs())), MemoryMiB: gib80}); err != nil {
					tb.Fatal(err)
				}
				if _, err := a.Allocate(key, req); err != nil {
					tb.Fatal(err)
				}
			} else if err != nil {
				tb.Fatal(err)
			}
			u, _ := req.Units(gib80)
			units[key] = u
			live = append(live, key)
		}
		if step > steps/4 && step%100 == 0 && a.LowerBound() > 0 {
			ratio := float64(a.InUse()) / float64(a.LowerBound())
			var us []int
			for _, u := range units {
				us = append(us, u)
			}
			l2 := float64(a.InUse()) / float64(boundL2(us))
			r.mean += ratio
			r.worst = max(r.worst, ratio)
			r.meanL2 += l2
			r.worstL2 = max(r.worstL2, l2)
			samples++
		}
	}
	r.mean /= float64(samples)
	r.meanL2 /= float64(samples)
	return r
}

// BenchmarkAllocate is one online decision on 64 GPUs that are about half full.
func BenchmarkAllocate(b *testing.B) {
	rng := rand.New(rand.NewPCG(3, 4))
	var gs []GPU
	for i := range 64 {
		gs = append(gs, GPU{ID: fmt.Sprintf("gpu-%02d", i), MemoryMiB: gib80})
	}
	a, _ := New(gs...)
	for i := range 150 {
		if _, err := a.Allocate(fmt.Sprintf("seed%d", i), mixes["mixed"].draw(rng)); err != nil {
			b.Fatal(err)
		}
	}
	for b.Loop() {
		if _, err := a.Allocate("x", Fraction(0.25)); err != nil {
			b.Fatal(err)
		}
		a.Release("x")
	}
}
