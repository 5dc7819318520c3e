package teamqueue_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	gpuvcv1 "github.com/gpuvc/gpuvc/api/v1alpha1"
	"github.com/gpuvc/gpuvc/e2e/testsupport/testobj"
	"github.com/gpuvc/gpuvc/manager/teamqueue"
)

// The shares benchmark's pools: four GPUs each, one sharing by usage history
// (poolHistoryBench, in historyPools), one with a ClusterQueue per team.
const (
	poolCohortBench = "fairc"
	sharesPoolGPUs  = 4
	// sharesJob is how long each job runs once Running.
	sharesJob = 4 * time.Second
)

// sharesBacklog is how many one-GPU pods each team submits at the start: more
// than the whole pool could run in the window, so neither team runs out.
func sharesBacklog(window time.Duration) int {
	return sharesPoolGPUs * (int(window/sharesJob) + 1)
}

// BenchmarkUsageHistoryShares measures how two teams with weights 1 and 2
// (spec.queueing.weight), each guaranteed half of a 4-GPU pool, share the
// pool's GPU-seconds when both have far more waiting than it runs: each
// submits its whole backlog (sharesBacklog one-GPU pods of 4 s, one of each
// team in turn) at the start and nothing later, so that every GPU that frees
// up in the window is given by Kueue's order. The window is 45 s (120 s with
// BENCH_SCALE=full). Two modes, one after the other:
//   - "history": the pool shares by usage history (--usage-history-pool):
//     one ClusterQueue, Kueue's AdmissionFairSharing ordering the teams'
//     pods by decayed past use over weight (half-life 30 s here);
//   - "no history": the same teams in a pool with a ClusterQueue per team in
//     the pool's cohort (gpuvc's default), borrowingLimit 2 each, so the
//     weights could act through Kueue's fair sharing of idle quota.
//
// Why nothing is submitted during the window: Kueue v0.17 moves waiting
// Workloads that did not fit back into its queue in batches, at most once a
// second per ClusterQueue, while a Workload created meanwhile enters the queue
// at once. A driver that replaces each team's pod the moment it ends (as the
// first version of this benchmark did) hands every freed GPU to the team that
// freed it, whatever the history: 0.498 for the weight-2 team with history and
// without, measured alone (docs/queueing.md, "Fairness with memory").
//
// GPU-seconds are the pods' time Running on the pool's kwok node (from the
// watch's first sight of Running to the completion the benchmark writes, or to
// Kueue's eviction), within the window. The figure is the weight-2 team's share
// of them (its weights' share is 2/3), over the whole window and over its
// second half (the history has built up).
func BenchmarkUsageHistoryShares(b *testing.B) {
	ctx := benchContext(b)
	window := 45 * time.Second
	if os.Getenv("BENCH_SCALE") == "full" {
		window = 120 * time.Second
	}
	gpuPool(ctx, b, poolHistoryBench, sharesPoolGPUs)
	gpuPool(ctx, b, poolCohortBench, sharesPoolGPUs)
	var history, cohort sharesResult
	b.ResetTimer()
	for i := range b.N {
		history = runShares(ctx, b, poolHistoryBench, fmt.Sprintf("fh%d", i), true, window)
		cohort = runShares(ctx, b, poolCohortBench, fmt.Sprintf("fc%d", i), false, window)
	}
	b.StopTimer()
	b.ReportMetric(history.share(false), "w2-share-history")
	b.ReportMetric(cohort.share(false), "w2-share-nohistory")
	b.ReportMetric(history.share(true), "w2-late-share-history")
	b.ReportMetric(cohort.share(true), "w2-late-share-nohistory")
	b.ReportMetric(history.utilization(window), "util-history")
	b.ReportMetric(cohort.utilization(window), "util-nohistory")
	b.ReportMetric(float64(cohort.evicted), "evicted-nohistory")
	b.ReportMetric(2.0/3, "w2-share-weights")
}

// sharesResult is what one mode of the shares benchmark measured, per weight
// (1, 2): GPU-seconds in the window and in its second half.
type sharesResult struct {
	gpuSeconds, lateGPUSeconds map[int32]float64
	evicted                    int
}

// share is the weight-2 team's share of the GPU-seconds (late: the second half).
func (r sharesResult) share(late bool) float64 {
	m := r.gpuSeconds
	if late {
		m = r.lateGPUSeconds
	}
	if m[1]+m[2] == 0 {
		return 0
	}
	return m[2] / (m[1] + m[2])
}

func (r sharesResult) utilization(window time.Duration) float64 {
	return (r.gpuSeconds[1] + r.gpuSeconds[2]) / (sharesPoolGPUs * window.Seconds())
}

// runShares creates the two teams of one mode in pool, submits each team's
// backlog (sharesBacklog one-GPU pods), completes each pod sharesJob after it
// runs until the window closes, and removes the teams.
func runShares(ctx context.Context, b *testing.B, pool, prefix string, history bool, window time.Duration) sharesResult {
	b.Helper()
	weights := []int32{1, 2}
	backlog := sharesBacklog(window)
	teams := map[int32]string{}
	clocks := map[int32]*podClock{}
	for _, w := range weights {
		teams[w] = fmt.Sprintf("%s-w%d", prefix, w)
		tm := testobj.Team(teams[w], pool).GPUs(sharesPoolGPUs / 2).Queued().Weight(w).MaxQueued(int32(backlog))
		if !history {
			tm = tm.Borrow(sharesPoolGPUs / 2)
		}
		createTeam(ctx, b, tm.Obj())
	}
	for _, w := range weights {
		if history {
			waitLocalQueueActive(ctx, b, teams[w], teamqueue.PoolClusterQueueName(pool))
		} else {
			waitActive(ctx, b, teams[w])
		}
		clocks[w] = watchPodClock(ctx, b, gpuvcv1.HostNamespace(teams[w]))
	}

	res := sharesResult{gpuSeconds: map[int32]float64{}, lateGPUSeconds: map[int32]float64{}}
	live := map[int32][]*attempt{}
	// The whole backlog, one pod of each team in turn, so that neither is
	// older in Kueue's first-come order (which decides among equal histories).
	for i := range backlog {
		for _, w := range weights {
			a := &attempt{role: teams[w], pod: fmt.Sprintf("p%d", i)}
			if !submit(ctx, b, teams[w], a.pod) {
				b.Fatalf("team %s's pod %s refused: its queue depth (maxQueued %d) must hold the backlog", teams[w], a.pod, backlog)
			}
			live[w] = append(live[w], a)
		}
	}
	// The window opens once the backlog is in: the pods admitted meanwhile
	// (the first of each team in turn) count from then on.
	t0 := time.Now()
	half := t0.Add(window / 2)
	end := t0.Add(window)
	count := func(w int32, a *attempt) {
		res.gpuSeconds[w] += a.ranBetween(t0, end)
		res.lateGPUSeconds[w] += a.ranBetween(half, end)
	}
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for now := t0; now.Before(end); now = <-tick.C {
		for _, w := range weights {
			c := clocks[w]
			kept := live[w][:0]
			for _, a := range live[w] {
				if a.start.IsZero() {
					a.start, _ = c.at(c.running, a.pod)
				}
				switch ended, gone := c.at(c.ended, a.pod); {
				case gone:
					// Kueue stopped it (a guarantee reclaimed): its time counts, the job is lost.
					a.end, a.over = ended, true
					res.evicted++
				case !a.start.IsZero() && time.Since(a.start) >= sharesJob:
					switch sent, err := completePod(ctx, teams[w], a.pod); {
					case err == nil:
						a.end, a.over = sent, true
					case !apierrors.IsNotFound(err):
						b.Fatalf("completing %s: %v", a.pod, err)
					}
				}
				if a.over {
					count(w, a)
				} else {
					kept = append(kept, a)
				}
			}
			live[w] = kept
		}
	}
	for _, w := range weights {
		for _, a := range live[w] {
			count(w, a)
		}
		removeTeam(ctx, b, teams[w])
	}
	return res
}

// ranBetween is how long the attempt ran inside [from, to]: until it was over,
// or (still running) until to.
func (a *attempt) ranBetween(from, to time.Time) float64 {
	if a.start.IsZero() {
		return 0
	}
	start, end := a.start, a.end
	if !a.over || end.After(to) {
		end = to
	}
	if start.Before(from) {
		start = from
	}
	if !end.After(start) {
		return 0
	}
	return end.Sub(start).Seconds()
}
