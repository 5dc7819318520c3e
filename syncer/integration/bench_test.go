package integration

import (
	"context"
	"fmt"
	"slices"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuvc/gpuvc/e2e/testobj"
)

// BenchmarkAdmission measures pod creation through the real API server in a team
// namespace (mutating + validating webhook, no CEL policy) and in a plain namespace (no
// webhook), interleaved so both see the same machine load, and reports latency
// percentiles, pods/s and the webhook's latency ratio in one run.
func BenchmarkAdmission(b *testing.B) {
	if testing.Short() || env.cp == nil {
		b.Skip("needs the local control plane (run without -short)")
	}
	ctx := context.Background()
	var fenced, plain []time.Duration
	var names []struct{ ns, name string }
	create := func(ns string, i int, into *[]time.Duration) {
		name := fmt.Sprintf("bench-%d-%d", time.Now().UnixNano(), i)
		// A one-GPU pod with no pool settings: the webhook pins it to the team's
		// pool, the whole chain runs.
		pod := testobj.Pod(name, ns).GPUs("1").Obj()
		start := time.Now()
		if _, err := env.cp.Client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			b.Fatalf("creating %s/%s: %v", ns, name, err)
		}
		*into = append(*into, time.Since(start))
		names = append(names, struct{ ns, name string }{ns, name})
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		create("team-fraud", i, &fenced)
		create("plain", i, &plain)
	}
	b.StopTimer()
	for _, n := range names {
		deletePod(n.ns, n.name)
	}
	p := func(d []time.Duration, q float64) float64 {
		s := slices.Clone(d)
		slices.Sort(s)
		return float64(s[int(q*float64(len(s)-1))].Microseconds()) / 1000
	}
	var total time.Duration
	for _, d := range fenced {
		total += d
	}
	b.ReportMetric(p(fenced, 0.5), "webhook-p50-ms")
	b.ReportMetric(p(fenced, 0.99), "webhook-p99-ms")
	b.ReportMetric(p(plain, 0.5), "plain-p50-ms")
	b.ReportMetric(p(plain, 0.99), "plain-p99-ms")
	b.ReportMetric(p(fenced, 0.5)/p(plain, 0.5), "p50-ratio")
	b.ReportMetric(float64(len(fenced))/total.Seconds(), "webhook-pods/s")
	// This process serves the webhook: its peak RSS bounds the webhook's memory.
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		b.ReportMetric(float64(ru.Maxrss)/1024, "webhook-process-maxrss-MiB")
	}
}
