package share_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/gpuvc/gpuvc/e2e/testobj"
	gpushare "github.com/gpuvc/gpuvc/gpu/share"
	"github.com/gpuvc/gpuvc/syncer"
)

// ungateWatch records when each share pod of a namespace is first seen without
// its gate, through a watch on the real API server.
type ungateWatch struct {
	mu      sync.Mutex
	at      map[string]time.Time
	waiters map[string]chan time.Time
	stop    func()
}

func watchUngates(ctx context.Context, b testing.TB, ns string) *ungateWatch {
	w, err := env.cp.Client.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{LabelSelector: syncer.LabelGPUShare + "=true"})
	if err != nil {
		b.Fatal(err)
	}
	u := &ungateWatch{at: map[string]time.Time{}, waiters: map[string]chan time.Time{}, stop: w.Stop}
	go func() {
		for ev := range w.ResultChan() {
			p, ok := ev.Object.(*corev1.Pod)
			if !ok || ev.Type == watch.Deleted || hasGate(p) {
				continue
			}
			now := time.Now()
			u.mu.Lock()
			if _, seen := u.at[p.Name]; !seen {
				u.at[p.Name] = now
				if ch := u.waiters[p.Name]; ch != nil {
					ch <- now
				}
			}
			u.mu.Unlock()
		}
	}()
	return u
}

// wait returns when name was ungated.
func (u *ungateWatch) wait(ctx context.Context, b testing.TB, name string) time.Time {
	u.mu.Lock()
	if t, ok := u.at[name]; ok {
		u.mu.Unlock()
		return t
	}
	ch := make(chan time.Time, 1)
	u.waiters[name] = ch
	u.mu.Unlock()
	select {
	case t := <-ch:
		return t
	case <-ctx.Done():
		b.Fatalf("pod %s never ungated: %v", name, ctx.Err())
		return time.Time{}
	}
}

func percentile(d []time.Duration, p float64) float64 {
	s := slices.Clone(d)
	slices.Sort(s)
	i := int(p * float64(len(s)-1))
	return float64(s[i].Microseconds()) / 1000
}

// BenchmarkUngateLatency measures create → gate removed (seen by a watch) for
// one 0.1 pod at a time, with up to five others alive: the steady state of a
// team whose reservation has room (the first pod also waits for a reservation).
func BenchmarkUngateLatency(b *testing.B) {
	requireHost(b)
	ctx := testContext(b, 10*time.Minute)
	ns := newTeam(ctx, b, "bench-latency", 8)
	u := watchUngates(ctx, b, ns)
	defer u.stop()
	var lat []time.Duration
	var live []string
	b.ResetTimer()
	for i := range b.N {
		name := fmt.Sprintf("l-%d", i)
		start := time.Now()
		createShare(ctx, b, ns, name, "0.1")
		lat = append(lat, u.wait(ctx, b, name).Sub(start))
		if live = append(live, name); len(live) > 5 {
			deletePod(ctx, b, ns, live[0])
			live = live[1:]
		}
	}
	b.StopTimer()
	b.ReportMetric(percentile(lat, 0.5), "p50-ms")
	b.ReportMetric(percentile(lat, 0.99), "p99-ms")
}

// BenchmarkBurst creates a burst of share pods at once (8 creators in parallel,
// seeded fractions 0.05–0.4 summing to at most 7 GPUs, within the quota of 8)
// and measures until every gate is gone: pods served per second, latency
// percentiles, and reservations held against ceil(Σ fractions).
func BenchmarkBurst(b *testing.B) {
	requireHost(b)
	ctx := testContext(b, 20*time.Minute)
	ns := newTeam(ctx, b, "bench-burst", 8)
	u := watchUngates(ctx, b, ns)
	defer u.stop()
	fractions := []string{"0.05", "0.1", "0.15", "0.2", "0.25", "0.3", "0.4"}
	rng := rand.New(rand.NewPCG(7, 7))
	var lat []time.Duration
	var podsPerSec, held, bound []float64
	b.ResetTimer()
	for i := range b.N {
		var burst []string
		frac := map[string]string{}
		sum := 0.0
		for {
			f := fractions[rng.IntN(len(fractions))]
			v, _ := strconv.ParseFloat(f, 64)
			if sum+v > 7 {
				break
			}
			name := fmt.Sprintf("b%d-%d", i, len(burst))
			burst, frac[name], sum = append(burst, name), f, sum+v
		}
		start := time.Now()
		created := make([]time.Time, len(burst))
		var wg sync.WaitGroup
		for w := range 8 {
			wg.Go(func() {
				for j := w; j < len(burst); j += 8 {
					created[j] = time.Now()
					createShare(ctx, b, ns, burst[j], frac[burst[j]])
				}
			})
		}
		wg.Wait()
		b.Logf("burst %d: %d pods created in %v", i, len(burst), time.Since(start).Round(time.Millisecond))
		last := start
		for j, name := range burst {
			t := u.wait(ctx, b, name)
			lat = append(lat, t.Sub(created[j]))
			if t.After(last) {
				last = t
			}
		}
		b.StopTimer()
		units := 0
		for _, p := range sharePods(ctx, b, ns) {
			n, _ := strconv.Atoi(p.Annotations[syncer.AnnotationShareUnits])
			units += n
		}
		podsPerSec = append(podsPerSec, float64(len(burst))/last.Sub(start).Seconds())
		held = append(held, float64(len(reservations(ctx, b, ns))))
		bound = append(bound, float64(gpushare.LowerBound(units)))
		b.Logf("burst %d: %d pods (Σ %.2f GPU) served in %v; %v reservations, lower bound %v",
			i, len(burst), sum, last.Sub(start).Round(time.Millisecond), held[i], bound[i])
		checkInvariants(ctx, b, ns, 8)
		cleanTeam(b, ns)
		b.StartTimer()
	}
	b.StopTimer()
	b.ReportMetric(percentile(lat, 0.5), "p50-ms")
	b.ReportMetric(percentile(lat, 0.99), "p99-ms")
	b.ReportMetric(mean(podsPerSec), "pods/s")
	b.ReportMetric(mean(held), "reservations")
	b.ReportMetric(mean(bound), "lower-bound")
	b.ReportMetric(mean(held)/mean(bound), "reservations/bound")
}

func mean(v []float64) float64 {
	s := 0.0
	for _, x := range v {
		s += x
	}
	return s / float64(len(v))
}

var _ = testobj.Pod
