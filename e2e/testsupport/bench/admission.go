package bench

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/gpuvc/gpuvc/e2e/testsupport/testobj"
)

// Admission measures pod creation through the real API server in a team
// namespace (fenced: gpuvc's admission) and in a plain namespace (none),
// interleaved so both see the same machine load, and reports latency
// percentiles, pods/s and the fence's latency ratio in one run. The pods name no
// pool (the webhook pins them, the whole chain runs) and ask for gpus GPUs
// ("" for none: a team quota would refuse GPU pods past its limit). When
// the webhook is served by this process, its peak RSS bounds the webhook's
// memory.
func Admission(b *testing.B, c kubernetes.Interface, fencedNS, plainNS, gpus string) {
	ctx := context.Background()
	var fenced, plain []time.Duration
	type created struct{ ns, name string }
	var pods []created
	create := func(ns string, i int, into *[]time.Duration) {
		name := fmt.Sprintf("bench-%d-%d", time.Now().UnixNano(), i)
		pod := testobj.Pod(name, ns)
		if gpus != "" {
			pod.GPUs(gpus)
		}
		start := time.Now()
		if _, err := c.CoreV1().Pods(ns).Create(ctx, pod.Obj(), metav1.CreateOptions{}); err != nil {
			b.Fatalf("creating %s/%s: %v", ns, name, err)
		}
		*into = append(*into, time.Since(start))
		pods = append(pods, created{ns, name})
	}
	b.ResetTimer()
	for i := range max(b.N, MinLatencySamples) {
		create(fencedNS, i, &fenced)
		create(plainNS, i, &plain)
	}
	b.StopTimer()
	for _, p := range pods {
		_ = c.CoreV1().Pods(p.ns).Delete(ctx, p.name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
	}
	var total time.Duration
	for _, d := range fenced {
		total += d
	}
	b.ReportMetric(Percentile(fenced, 0.5), "webhook-p50-ms")
	b.ReportMetric(Percentile(fenced, 0.99), "webhook-p99-ms")
	b.ReportMetric(Percentile(plain, 0.5), "plain-p50-ms")
	b.ReportMetric(Percentile(plain, 0.99), "plain-p99-ms")
	b.ReportMetric(Percentile(fenced, 0.5)/Percentile(plain, 0.5), "p50-ratio")
	b.ReportMetric(float64(len(fenced))/total.Seconds(), "webhook-pods/s")
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		b.ReportMetric(float64(ru.Maxrss)/1024, "process-maxrss-MiB")
	}
}
