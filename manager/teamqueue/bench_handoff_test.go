package teamqueue_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gpuvcv1 "github.com/gpuvc/gpuvc/api/v1alpha1"
	"github.com/gpuvc/gpuvc/e2e/localcp"
	"github.com/gpuvc/gpuvc/e2e/testsupport/bench"
	"github.com/gpuvc/gpuvc/e2e/testsupport/poll"
	"github.com/gpuvc/gpuvc/e2e/testsupport/testobj"
)

func benchContext(b *testing.B) context.Context {
	b.Helper()
	localcp.ForTest(b)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	b.Cleanup(cancel)
	return ctx
}

// BenchmarkQueueHandoff measures how long a queued GPU pod waits once a GPU
// frees up: team "handoff" is guaranteed the one GPU of its pool; in each round
// pod a runs, pod q waits in Kueue (its Workload was tried and did not fit), a
// completes (status Succeeded, as its container ending would write it) and the
// time until a watch sees q's admission gate removed is one sample ("handoff":
// Kueue finishes a's Workload, releases its quota, requeues and admits q, and
// ungates the pod). Baseline in the same run: a pod created while the GPU is
// free, create → ungated ("free": Kueue's admission path with nothing to wait
// for). p50/p99 over max(b.N, 100) rounds.
func BenchmarkQueueHandoff(b *testing.B) {
	ctx := benchContext(b)
	gpuPool(ctx, b, "handoff", 1)
	createTeam(ctx, b, testobj.Team("handoff", "handoff").GPUs(1).Borrow(1).Obj())
	waitActive(ctx, b, "handoff")
	ns := gpuvcv1.HostNamespace("handoff")
	clock := watchPodClock(ctx, b, ns)
	create := func(name string) time.Time {
		start := time.Now()
		if _, err := host.Client.CoreV1().Pods(ns).Create(ctx, testobj.Pod(name, ns).GPUs("1").Obj(), metav1.CreateOptions{}); err != nil {
			b.Fatalf("creating pod %s: %v", name, err)
		}
		return start
	}
	waitRunning := func(name string) {
		poll.Until(ctx, b, time.Minute, name+" running", func(context.Context) (bool, error) {
			_, ok := clock.at(clock.running, name)
			return ok, nil
		})
	}

	var free, handoff []time.Duration
	b.ResetTimer()
	for i := range max(b.N, bench.MinLatencySamples/2) {
		a, q := fmt.Sprintf("a-%d", i), fmt.Sprintf("q-%d", i)
		start := create(a)
		free = append(free, clock.waitUngated(ctx, b, a).Sub(start))
		waitRunning(a)
		create(q)
		waitWorkload(ctx, b, ns, q, "QuotaReserved", "False")
		start = complete(ctx, b, "handoff", a)
		handoff = append(handoff, clock.waitUngated(ctx, b, q).Sub(start))
		waitRunning(q)
		complete(ctx, b, "handoff", q)
		waitWorkload(ctx, b, ns, q, "Finished", "True")
		for _, p := range []string{a, q} {
			_ = host.Client.CoreV1().Pods(ns).Delete(ctx, p, metav1.DeleteOptions{})
		}
	}
	b.StopTimer()
	b.ReportMetric(bench.Percentile(handoff, 0.5), "handoff-p50-ms")
	b.ReportMetric(bench.Percentile(handoff, 0.99), "handoff-p99-ms")
	b.ReportMetric(bench.Percentile(free, 0.5), "free-p50-ms")
	b.ReportMetric(bench.Percentile(free, 0.99), "free-p99-ms")
	b.ReportMetric(float64(len(handoff)), "rounds")
}

// waitWorkload waits until the pod's Workload has condition typ with status.
func waitWorkload(ctx context.Context, tb testing.TB, ns, pod, typ, status string) {
	tb.Helper()
	poll.UntilSeen(ctx, tb, time.Minute, fmt.Sprintf("Workload of %s: %s=%s", pod, typ, status), func(ctx context.Context) (bool, string, error) {
		wl, err := workloadOf(ctx, ns, pod)
		if wl == nil || err != nil {
			return false, "no Workload yet", err
		}
		st, msg := condition(wl, typ)
		return st == status, st + ": " + msg, nil
	})
}
