package bench

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/gpuvc/gpuvc/e2e/testsupport/poll"
)

// blockSize is how many pods one on or off block creates before the webhook
// is switched: blocks alternate so both modes see the same machine load.
const blockSize = 25

// MinLatencySamples is the fewest latencies a percentile benchmark takes,
// whatever b.N: a p99 of go test's default dozen samples is their maximum.
const MinLatencySamples = 200

// WebhookOverhead measures what gpuvc's webhook alone adds to pod creation:
// one namespace (its quota, its CEL fence), the same admitted pod template,
// created one at a time in alternating blocks with the webhook on and off.
// max(b.N, MinLatencySamples) pods per mode. Reports p50/p99 of each mode and
// the ratios, and with costs (nil: none) what each mode cost per pod.
func WebhookOverhead(ctx context.Context, b *testing.B, c kubernetes.Interface, sw *WebhookSwitch, costs *Costs) {
	tmpl, err := sw.Template(ctx)
	if err != nil {
		b.Fatal(err)
	}
	var on, off []time.Duration
	var onCost, offCost CostDelta
	total := max(b.N, MinLatencySamples)
	b.ResetTimer()
	for done := 0; done < total; {
		n := min(blockSize, total-done)
		b.StopTimer()
		switchTo(ctx, b, sw, false)
		b.StartTimer()
		costs.measure(ctx, b, &offCost, "overhead-off", func() { off = append(off, createSerially(ctx, b, c, sw.ns, tmpl, "off", done, n)...) })
		b.StopTimer()
		switchTo(ctx, b, sw, true)
		b.StartTimer()
		costs.measure(ctx, b, &onCost, "overhead-on", func() { on = append(on, createSerially(ctx, b, c, sw.ns, tmpl, "on", done, n)...) })
		done += n
	}
	b.StopTimer()
	deleteAll(ctx, b, c, sw.ns)
	b.ReportMetric(Percentile(on, 0.5), "on-p50-ms")
	b.ReportMetric(Percentile(on, 0.99), "on-p99-ms")
	b.ReportMetric(Percentile(off, 0.5), "off-p50-ms")
	b.ReportMetric(Percentile(off, 0.99), "off-p99-ms")
	b.ReportMetric(Percentile(on, 0.5)/Percentile(off, 0.5), "p50-ratio")
	b.ReportMetric(Percentile(on, 0.99)/Percentile(off, 0.99), "p99-ratio")
	onCost.Report(b.ReportMetric, "on-", len(on))
	offCost.Report(b.ReportMetric, "off-", len(off))
	b.Logf("API requests per pod, webhook on: %s", onCost.TopRequests(8, len(on)))
	b.Logf("API requests per pod, webhook off: %s", offCost.TopRequests(8, len(off)))
}

// Throughput creates pods from clients concurrent clients, each with its own
// connection and no client-side rate limit, with the webhook off and on (b.N
// rounds of perRound pods per mode, each round in halves ordered off, on, on,
// off, so that a drift of the machine's load during the round weighs on both
// modes alike): pods/s of each and their ratio, and with costs (nil: none)
// what each mode cost per pod and where the time went.
func Throughput(ctx context.Context, b *testing.B, newClient func() kubernetes.Interface, sw *WebhookSwitch, clients, perRound int, costs *Costs) {
	tmpl, err := sw.Template(ctx)
	if err != nil {
		b.Fatal(err)
	}
	cs := make([]kubernetes.Interface, clients)
	for i := range cs {
		cs[i] = newClient()
	}
	var onPods, offPods int
	var onTime, offTime time.Duration
	var onCost, offCost CostDelta
	b.ResetTimer()
	var current *bool // the webhook's state, once set
	for round := range b.N {
		for half, mode := range []bool{false, true, true, false} {
			n := perRound / 2
			if half >= 2 {
				n = perRound - n
			}
			b.StopTimer()
			if current == nil || *current != mode {
				switchTo(ctx, b, sw, mode)
				current = &mode
			}
			b.StartTimer()
			var d time.Duration
			cost, name := &offCost, fmt.Sprintf("throughput-%d-off", clients)
			if mode {
				cost, name = &onCost, fmt.Sprintf("throughput-%d-on", clients)
			}
			costs.measure(ctx, b, cost, name, func() {
				d = createConcurrently(ctx, b, cs, sw.ns, tmpl, fmt.Sprintf("t%v-%d-%d", mode, round, half), n)
			})
			if mode {
				onPods, onTime = onPods+n, onTime+d
			} else {
				offPods, offTime = offPods+n, offTime+d
			}
			b.StopTimer()
			deleteAll(ctx, b, cs[0], sw.ns)
			b.StartTimer()
		}
	}
	b.StopTimer()
	if current != nil && !*current {
		switchTo(ctx, b, sw, true) // the webhook on again, as the next benchmark expects it
	}
	onRate, offRate := float64(onPods)/onTime.Seconds(), float64(offPods)/offTime.Seconds()
	b.ReportMetric(onRate, "on-pods/s")
	b.ReportMetric(offRate, "off-pods/s")
	b.ReportMetric(onRate/offRate, "on/off")
	onCost.Report(b.ReportMetric, "on-", onPods)
	offCost.Report(b.ReportMetric, "off-", offPods)
	b.Logf("API requests per pod, webhook on: %s", onCost.TopRequests(8, onPods))
	b.Logf("API requests per pod, webhook off: %s", offCost.TopRequests(8, offPods))
}

func switchTo(ctx context.Context, b *testing.B, sw *WebhookSwitch, on bool) {
	var err error
	if on {
		err = sw.On(ctx)
	} else {
		err = sw.Off(ctx)
	}
	if err != nil {
		b.Fatal(err)
	}
}

func createSerially(ctx context.Context, b *testing.B, c kubernetes.Interface, ns string, tmpl *corev1.Pod, tag string, from, n int) []time.Duration {
	lat := make([]time.Duration, 0, n)
	for i := range n {
		p := tmpl.DeepCopy()
		p.Name, p.Namespace = fmt.Sprintf("oh-%s-%d", tag, from+i), ns
		start := time.Now()
		if _, err := c.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			b.Fatalf("creating pod %s/%s (webhook %s): %v", ns, p.Name, tag, err)
		}
		lat = append(lat, time.Since(start))
	}
	return lat
}

// createConcurrently creates n pods from all clients at once and returns the
// wall time from the first request to the last answer.
func createConcurrently(ctx context.Context, b *testing.B, cs []kubernetes.Interface, ns string, tmpl *corev1.Pod, tag string, n int) time.Duration {
	var next atomic.Int64
	var firstErr atomic.Value
	var wg sync.WaitGroup
	start := time.Now()
	for _, c := range cs {
		wg.Go(func() {
			for {
				i := next.Add(1) - 1
				if i >= int64(n) || firstErr.Load() != nil {
					return
				}
				p := tmpl.DeepCopy()
				p.Name, p.Namespace = fmt.Sprintf("tp-%s-%d", tag, i), ns
				if _, err := c.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
					firstErr.CompareAndSwap(nil, fmt.Errorf("creating pod %s/%s: %w", ns, p.Name, err))
					return
				}
			}
		})
	}
	wg.Wait()
	d := time.Since(start)
	if err, _ := firstErr.Load().(error); err != nil {
		b.Fatal(err)
	}
	return d
}

// deleteAll removes the pods this harness created in the namespace (never the
// team's vCluster) and waits until they are gone, so the next block starts
// from the same state.
func deleteAll(ctx context.Context, b *testing.B, c kubernetes.Interface, ns string) {
	pods := c.CoreV1().Pods(ns)
	mine := metav1.ListOptions{LabelSelector: overheadLabel}
	if err := pods.DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}, mine); err != nil {
		b.Fatal(err)
	}
	poll.Until(ctx, b, 2*time.Minute, "benchmark pods of "+ns+" gone", func(ctx context.Context) (bool, error) {
		mine := mine
		mine.Limit = 1
		l, err := pods.List(ctx, mine)
		return err == nil && len(l.Items) == 0, nil
	})
}
