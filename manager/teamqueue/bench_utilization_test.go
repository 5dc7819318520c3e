package teamqueue_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/gpuvc/gpuvc/api/contract"
	gpuvcv1 "github.com/gpuvc/gpuvc/api/v1alpha1"
	"github.com/gpuvc/gpuvc/e2e/testsupport/poll"
	"github.com/gpuvc/gpuvc/e2e/testsupport/testobj"
)

// utilPoolGPUs is the pool of the utilization benchmark: one kwok node.
const utilPoolGPUs = 8

// BenchmarkPoolUtilization measures how much of a GPU pool two teams keep busy
// under the seeded mixed workload of mixedLoad (a steady team below its
// guarantee, a bursty team with a backlog), each guaranteed half the pool:
// GPU-seconds run (pods Running on the pool's kwok node, from the watch's first
// sight of Running to the completion the benchmark writes, or to Kueue's
// eviction) over the pool's capacity-seconds in the window (40 s; 120 s with
// BENCH_SCALE=full). Both modes run in the same process one after the other on
// pools of their own: "borrow" (each team may borrow the other's idle
// guarantee, borrowingLimit 4) and its baseline "noborrow" (borrowingLimit
// absent: 0). Each job's pod is created when the job arrives; one the team's
// ResourceQuota or gpuvc's QueueFull refuses (beyond ceiling + queue depth)
// is resubmitted when quota frees, as a Job controller would; one evicted by
// Kueue (its guarantee reclaimed) is resubmitted and restarts from scratch.
//
// Two queue depths, as sub-benchmarks:
//   - "queue=default": spec.queueing.maxQueued absent (as deep as the
//     ceiling), as a team gets it: jobs beyond the ceiling wait in Kueue;
//   - "queue=0": maxQueued 0, the ResourceQuota at the ceiling, so the
//     driver holds the backlog and resubmits refused jobs (how gpuvc
//     behaved before the queue depth existed).
func BenchmarkPoolUtilization(b *testing.B) {
	for _, depth := range []struct {
		name      string
		maxQueued *int32
	}{{"queue=default", nil}, {"queue=0", ptr.To[int32](0)}} {
		b.Run(depth.name, func(b *testing.B) { benchPoolUtilization(b, depth.maxQueued) })
	}
}

func benchPoolUtilization(b *testing.B, maxQueued *int32) {
	ctx := benchContext(b)
	window := 40 * time.Second
	if os.Getenv("BENCH_SCALE") == "full" {
		window = 120 * time.Second
	}
	jobs := mixedLoad(1, utilPoolGPUs, window)
	prefix := "d"
	if maxQueued != nil {
		prefix = fmt.Sprintf("q%d", *maxQueued)
	}
	var borrow, noborrow loadResult
	b.ResetTimer()
	for i := range b.N {
		noborrow = runMixedLoad(ctx, b, fmt.Sprintf("%snb%d", prefix, i), false, maxQueued, jobs, window)
		borrow = runMixedLoad(ctx, b, fmt.Sprintf("%sbw%d", prefix, i), true, maxQueued, jobs, window)
	}
	b.StopTimer()
	b.ReportMetric(borrow.utilization(window), "util-borrow")
	b.ReportMetric(noborrow.utilization(window), "util-noborrow")
	b.ReportMetric(borrow.utilization(window)/noborrow.utilization(window), "util-ratio")
	b.ReportMetric(float64(borrow.completed), "jobs-done-borrow")
	b.ReportMetric(float64(noborrow.completed), "jobs-done-noborrow")
	b.ReportMetric(float64(borrow.evicted), "evicted-borrow")
	b.ReportMetric(float64(borrow.refusedJobs), "refused-jobs-borrow")
	b.ReportMetric(float64(noborrow.refusedJobs), "refused-jobs-noborrow")
	b.ReportMetric(borrow.lostGPUSeconds/(utilPoolGPUs*window.Seconds()), "lost-borrow")
	b.ReportMetric(float64(len(jobs)), "jobs")
}

// loadResult is what one mode of the utilization run measured.
type loadResult struct {
	// gpuSeconds is the time pods ran; lostGPUSeconds the part of it spent by
	// pods that Kueue then evicted (their work is lost).
	gpuSeconds, lostGPUSeconds float64
	completed, evicted         int
	// refusedJobs counts jobs whose pod was refused at least once (beyond
	// ceiling + queue depth) and resubmitted by the driver.
	refusedJobs int
}

func (r loadResult) utilization(window time.Duration) float64 {
	return r.gpuSeconds / (utilPoolGPUs * window.Seconds())
}

// attempt is one pod submitted for a job.
type attempt struct {
	job        int
	role, pod  string
	start, end time.Time
	over       bool
}

// runMixedLoad creates a pool and the two teams of mode name (borrowingLimit 4
// each with borrow, none without; queue depth maxQueued, nil: the default),
// drives jobs for window, and removes them.
func runMixedLoad(ctx context.Context, b *testing.B, name string, borrow bool, maxQueued *int32, jobs []job, window time.Duration) loadResult {
	b.Helper()
	pool := "util-" + name
	gpuPool(ctx, b, pool, utilPoolGPUs)
	teams := map[string]string{roleSteady: name + "-steady", roleBursty: name + "-bursty"}
	clocks := map[string]*podClock{}
	for _, role := range []string{roleSteady, roleBursty} {
		tm := testobj.Team(teams[role], pool).GPUs(utilPoolGPUs / 2).Queued()
		if maxQueued != nil {
			tm = tm.MaxQueued(*maxQueued)
		}
		if borrow {
			tm = tm.Borrow(utilPoolGPUs / 2)
		}
		createTeam(ctx, b, tm.Obj())
		waitActive(ctx, b, teams[role])
		clocks[role] = watchPodClock(ctx, b, gpuvcv1.HostNamespace(teams[role]))
	}

	var res loadResult
	var live []*attempt
	pending := map[string][]int{}
	tries := make([]int, len(jobs))
	refused := make([]bool, len(jobs))
	next := 0
	t0 := time.Now()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for now := t0; now.Sub(t0) < window; now = <-tick.C {
		for ; next < len(jobs) && jobs[next].At <= now.Sub(t0); next++ {
			pending[jobs[next].Team] = append(pending[jobs[next].Team], next)
		}
		for role, queue := range pending {
			for len(queue) > 0 {
				j := queue[0]
				a := &attempt{job: j, role: role, pod: fmt.Sprintf("j%d-%d", j, tries[j])}
				if !submit(ctx, b, teams[role], a.pod) {
					if !refused[j] {
						refused[j] = true
						res.refusedJobs++
					}
					break // beyond ceiling + queue depth: retried when quota frees
				}
				tries[j]++
				live = append(live, a)
				queue = queue[1:]
			}
			pending[role] = queue
		}
		kept := live[:0]
		for _, a := range live {
			c := clocks[a.role]
			if a.start.IsZero() {
				a.start, _ = c.at(c.running, a.pod)
			}
			switch ended, gone := c.at(c.ended, a.pod); {
			case gone:
				// Kueue stopped it (reclaim): the job starts again.
				a.end, a.over = ended, true
				res.evicted++
				res.lostGPUSeconds += a.ranWithin(t0, window)
				pending[a.role] = insertSorted(pending[a.role], a.job)
			case !a.start.IsZero() && time.Since(a.start) >= jobs[a.job].Dur:
				// NotFound: evicted meanwhile; the next tick sees it gone.
				switch sent, err := completePod(ctx, teams[a.role], a.pod); {
				case err == nil:
					a.end, a.over = sent, true
					res.completed++
				case !apierrors.IsNotFound(err):
					b.Fatalf("completing %s: %v", a.pod, err)
				}
			}
			if a.over {
				res.gpuSeconds += a.ranWithin(t0, window)
			} else {
				kept = append(kept, a)
			}
		}
		live = kept
	}
	for _, a := range live {
		res.gpuSeconds += a.ranWithin(t0, window)
	}
	for _, role := range []string{roleSteady, roleBursty} {
		removeTeam(ctx, b, teams[role])
	}
	return res
}

// ranWithin is how long the attempt ran inside [t0, t0+window]: until it was
// over, or (still running) until the window closed.
func (a *attempt) ranWithin(t0 time.Time, window time.Duration) float64 {
	if a.start.IsZero() {
		return 0
	}
	end := a.end
	if !a.over {
		end = t0.Add(window)
	}
	if limit := t0.Add(window); end.After(limit) {
		end = limit
	}
	if end.Before(a.start) {
		return 0
	}
	return end.Sub(a.start).Seconds()
}

// submit creates a job's one-GPU pod; false if it is refused beyond the team's
// ceiling plus queue depth (gpuvc's QueueFull, or the ResourceQuota's own
// refusal), counting queued pods.
func submit(ctx context.Context, b *testing.B, team, pod string) bool {
	ns := gpuvcv1.HostNamespace(team)
	_, err := host.Client.CoreV1().Pods(ns).Create(ctx, testobj.Pod(pod, ns).GPUs("1").Obj(), metav1.CreateOptions{})
	if apierrors.IsForbidden(err) && (strings.Contains(err.Error(), "exceeded quota") || strings.Contains(err.Error(), contract.ReasonQueueFull)) {
		return false
	}
	if err != nil {
		b.Fatalf("creating pod %s/%s: %v", ns, pod, err)
	}
	return true
}

func insertSorted(queue []int, j int) []int {
	i := 0
	for i < len(queue) && queue[i] < j {
		i++
	}
	return append(queue[:i], append([]int{j}, queue[i:]...)...)
}

// removeTeam deletes a Team and waits until its namespace is gone, so the next
// mode does not share the machine with its teardown.
func removeTeam(ctx context.Context, b *testing.B, name string) {
	b.Helper()
	if err := c.Delete(ctx, testobj.Team(name, "").Obj()); err != nil && !apierrors.IsNotFound(err) {
		b.Fatal(err)
	}
	poll.Until(ctx, b, 3*time.Minute, "namespace of team "+name+" deleted", func(ctx context.Context) (bool, error) {
		_, err := host.Client.CoreV1().Namespaces().Get(ctx, gpuvcv1.HostNamespace(name), metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
}
