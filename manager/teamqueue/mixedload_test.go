package teamqueue_test

import (
	"math/rand/v2"
	"slices"
	"time"
)

// job is one GPU pod of a simulated workload: its team submits it at At (from
// the start of the run) and it runs for Dur once it runs.
type job struct {
	Team    string
	At, Dur time.Duration
}

// Roles of the two teams of the mixed workload.
const (
	roleSteady = "steady"
	roleBursty = "bursty"
)

// mixedLoad is the seeded workload of two teams, each guaranteed half of a pool
// of gpus GPUs, over window:
//   - steady submits a one-GPU job every 2 s lasting 4–6 s: about 2.5 GPUs
//     busy, below its guarantee, so some of its guarantee idles;
//   - bursty submits two bursts, at 0 and window/2, each of one-GPU jobs
//     lasting 3–7 s whose work is 1.5× what its guarantee serves in half the
//     window: without borrowing it always has a backlog.
//
// Jobs are in submission order.
func mixedLoad(seed uint64, gpus int, window time.Duration) []job {
	rng := rand.New(rand.NewPCG(seed, seed))
	dur := func(lo, hi int) time.Duration {
		return time.Duration(lo*1000+rng.IntN((hi-lo)*1000+1)) * time.Millisecond
	}
	var jobs []job
	for at := time.Duration(0); at < window; at += 2 * time.Second {
		jobs = append(jobs, job{Team: roleSteady, At: at, Dur: dur(4, 6)})
	}
	half := window / 2
	burstWork := time.Duration(float64(gpus/2) * half.Seconds() * 1.5 * float64(time.Second))
	for _, at := range []time.Duration{0, half} {
		for work := time.Duration(0); work < burstWork; {
			d := dur(3, 7)
			jobs = append(jobs, job{Team: roleBursty, At: at, Dur: d})
			work += d
		}
	}
	slices.SortStableFunc(jobs, func(a, b job) int { return int(a.At - b.At) })
	return jobs
}
