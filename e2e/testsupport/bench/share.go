package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/gpuvc/gpuvc/api/contract"
	gpushare "github.com/gpuvc/gpuvc/gpu/share"
)

// UngateLatency measures create → gate removed (seen by a watch) for one 0.1
// pod at a time, with up to five others alive: the steady state of a team
// whose reservation has room (the first pod also waits for a reservation).
// It reports p50-ms and p99-ms over max(b.N, MinLatencySamples/2) pods, and
// where the time goes, step by step (p50 of each): the create through the
// webhooks (create-p50-ms), from the create's answer to the pod's share
// ConfigMap seen by a watch (configmap-p50-ms: the share controller's watch,
// its reconcile and its write), and from there to the gate seen gone
// (lift-p50-ms: the pod update through the webhooks, and the watch).
func UngateLatency(ctx context.Context, b *testing.B, tm Team) {
	u := tm.WatchUngates(ctx, b)
	defer u.Stop()
	cms := tm.WatchShareConfigMaps(ctx, b)
	defer cms.Stop()
	var lat, create, configMap, lift []time.Duration
	var live []string
	work := &Costs{Local: tm.Local}
	s0, err := work.Snapshot(ctx)
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := range max(b.N, MinLatencySamples/2) {
		name := fmt.Sprintf("l-%d", i)
		start := time.Now()
		pod := tm.CreateShare(ctx, b, name, "0.1")
		created := time.Now()
		ungated := u.Wait(ctx, b, name)
		written := cms.Wait(ctx, b, string(pod.UID))
		lat = append(lat, ungated.Sub(start))
		create = append(create, created.Sub(start))
		configMap = append(configMap, written.Sub(created))
		lift = append(lift, ungated.Sub(written))
		if live = append(live, name); len(live) > 5 {
			tm.DeletePod(ctx, b, live[0])
			live = live[1:]
		}
	}
	b.StopTimer()
	s1, err := work.Snapshot(ctx)
	if err != nil {
		b.Fatal(err)
	}
	work1 := s1.Since(s0)
	if h := work1.ShareSeenToBound; h.Count > 0 {
		// Against configmap-p50-ms: what the controller waited for once its
		// watch had the pod, and what came before (the watch's delivery).
		b.ReportMetric(h.Mean()*1000, "seen-to-bound-mean-ms")
	}
	if w, ok := work1.Controllers[tm.Controller]; ok && w.Reconciles > 0 {
		// Each share pod's create, binding and status changes (and the
		// deletion of one before it) wake the team's reconcile.
		b.ReportMetric(w.Reconciles/float64(len(lat)), "reconciles/pod")
		b.ReportMetric(w.Time.Mean()*1000, "reconcile-mean-ms")
		b.ReportMetric(w.QueueWait.Mean()*1000, "queue-wait-mean-ms")
	}
	b.ReportMetric(Percentile(lat, 0.5), "p50-ms")
	b.ReportMetric(Percentile(lat, 0.99), "p99-ms")
	b.ReportMetric(Percentile(create, 0.5), "create-p50-ms")
	b.ReportMetric(Percentile(configMap, 0.5), "configmap-p50-ms")
	b.ReportMetric(Percentile(lift, 0.5), "lift-p50-ms")
	tm.Clean(b)
}

// Burst creates a burst of share pods at once (8 creators in parallel, seeded
// fractions 0.05–0.4 summing to at most 7 GPUs: the team's quota must allow 8)
// and measures until every gate is gone: pods served per second, latency
// percentiles, and reservations held against their lower bound ceil(Σ
// fractions). After each burst the invariants are checked and the team cleaned.
func Burst(ctx context.Context, b *testing.B, tm Team) {
	u := tm.WatchUngates(ctx, b)
	defer u.Stop()
	fractions := []string{"0.05", "0.1", "0.15", "0.2", "0.25", "0.3", "0.4"}
	rng := rand.New(rand.NewPCG(7, 7))
	var lat, create, forReservation, afterReady []time.Duration
	var podsPerSec, held, bound, ready, served []float64
	// The work of the bursts themselves, from before the first create to the
	// last gate seen gone (not the cleaning between them).
	work := &Costs{Local: tm.Local, Metrics: tm.Client}
	var spent CostDelta
	pods := 0
	b.ResetTimer()
	for i := range b.N {
		burst, frac, sum := plan(rng, fractions, i)
		trace := tm.TraceBurst(ctx, b)
		s0, err := work.Snapshot(ctx)
		if err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		created := make([]time.Time, len(burst))
		answered := make([]time.Time, len(burst))
		var wg sync.WaitGroup
		for w := range 8 {
			wg.Go(func() {
				for j := w; j < len(burst); j += 8 {
					created[j] = time.Now()
					tm.CreateShare(ctx, b, burst[j], frac[burst[j]])
					answered[j] = time.Now()
				}
			})
		}
		wg.Wait()
		b.Logf("burst %d: %d pods created in %v", i, len(burst), time.Since(start).Round(time.Millisecond))
		last := start
		for j, name := range burst {
			t := u.Wait(ctx, b, name)
			lat = append(lat, t.Sub(created[j]))
			if t.After(last) {
				last = t
			}
		}
		b.StopTimer()
		s1, err := work.Snapshot(ctx)
		if err != nil {
			b.Fatal(err)
		}
		spent.Add(s1.Since(s0))
		pods += len(burst)
		steps := trace.Steps(start, burst, answered)
		trace.Stop()
		b.Logf("burst %d: %v", i, steps)
		for j := range burst {
			create = append(create, answered[j].Sub(created[j]))
		}
		forReservation = append(forReservation, steps.ForReservation...)
		afterReady = append(afterReady, steps.AfterReady...)
		ready = append(ready, steps.LastReady)
		served = append(served, steps.LastUngated)
		units := 0
		for _, p := range tm.SharePods(ctx, b) {
			n, _ := strconv.Atoi(p.Annotations[contract.AnnotationShareUnits])
			units += n
		}
		podsPerSec = append(podsPerSec, float64(len(burst))/last.Sub(start).Seconds())
		held = append(held, float64(len(tm.Reservations(ctx, b))))
		bound = append(bound, float64(gpushare.LowerBound(units)))
		b.Logf("burst %d: %d pods (Σ %.2f GPU) served in %v; %v reservations, lower bound %v",
			i, len(burst), sum, last.Sub(start).Round(time.Millisecond), held[i], bound[i])
		tm.CheckInvariants(ctx, b)
		tm.Clean(b)
		b.StartTimer()
	}
	b.StopTimer()
	if spent.Requests > 0 {
		// What a share pod of a burst costs the API server, by request: the
		// same whatever the load, unlike the latencies.
		b.ReportMetric(spent.Requests/float64(pods), "apiserver-requests/pod")
		b.Logf("API requests per share pod: %s", spent.TopRequests(14, pods))
	}
	if w, ok := spent.Controllers[tm.Controller]; ok && w.Reconciles > 0 {
		b.ReportMetric(w.Reconciles/float64(pods), "reconciles/pod")
		b.ReportMetric(w.Time.Mean()*1000, "reconcile-mean-ms")
		b.ReportMetric(w.QueueWait.Mean()*1000, "queue-wait-mean-ms")
	}
	b.ReportMetric(Percentile(lat, 0.5), "p50-ms")
	b.ReportMetric(Percentile(lat, 0.99), "p99-ms")
	// Where a pod's time went (p50 of each): its create through the webhooks,
	// then waiting for its reservation (created, scheduled, its GPU reported),
	// then the share controller's binding once both were there.
	b.ReportMetric(Percentile(create, 0.5), "create-p50-ms")
	b.ReportMetric(Percentile(forReservation, 0.5), "for-reservation-p50-ms")
	b.ReportMetric(Percentile(afterReady, 0.5), "after-ready-p50-ms")
	// From the burst's start: every reservation ready, every gate gone.
	b.ReportMetric(Mean(ready), "reservations-ready-ms")
	b.ReportMetric(Mean(served), "served-ms")
	b.ReportMetric(Mean(podsPerSec), "pods/s")
	b.ReportMetric(Mean(held), "reservations")
	b.ReportMetric(Mean(bound), "lower-bound")
	b.ReportMetric(Mean(held)/Mean(bound), "reservations/bound")
}

// plan draws burst i: pod names and fractions until Σ would exceed 7 GPUs.
func plan(rng *rand.Rand, fractions []string, i int) (names []string, frac map[string]string, sum float64) {
	frac = map[string]string{}
	for {
		f := fractions[rng.IntN(len(fractions))]
		v, _ := strconv.ParseFloat(f, 64)
		if sum+v > 7 {
			return names, frac, sum
		}
		name := fmt.Sprintf("b%d-%d", i, len(names))
		names, frac[name], sum = append(names, name), f, sum+v
	}
}
