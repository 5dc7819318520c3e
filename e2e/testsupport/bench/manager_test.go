package bench_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/gpuvc/gpuvc/manager"

	"github.com/gpuvc/gpuvc/e2e/testsupport/bench"
)

func benchContext(b *testing.B, d time.Duration) context.Context {
	if env.cp == nil {
		b.Skip("needs the local control plane and the manager (run with -bench, without -short)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), d)
	b.Cleanup(cancel)
	return ctx
}

// BenchmarkManagerUngateLatency: create → gate removed for one 0.1 pod at a
// time, served by the manager's share controller.
func BenchmarkManagerUngateLatency(b *testing.B) {
	bench.UngateLatency(benchContext(b, 10*time.Minute), b, env.team)
}

// BenchmarkManagerBurst: bursts of share pods summing to at most 7 GPUs in a
// team with a quota of 8: pods/s, latency, reservations held against the lower
// bound, invariants after each burst.
func BenchmarkManagerBurst(b *testing.B) {
	bench.Burst(benchContext(b, 20*time.Minute), b, env.team)
}

// BenchmarkManagerWebhookOverhead: gpuvc's webhook alone. The team namespace
// keeps its quota and CEL fence; the same admitted CPU pod is created one at a
// time with the webhook on and off, in alternating blocks (bench.WebhookOverhead).
func BenchmarkManagerWebhookOverhead(b *testing.B) {
	ctx := benchContext(b, 10*time.Minute)
	bench.WebhookOverhead(ctx, b, env.cp.Client, webhookSwitch(ctx, b), costs())
}

// BenchmarkManagerThroughput: pods/s from 1 to 64 concurrent clients, webhook
// off and on, in the team namespace (bench.Throughput): where the curve
// flattens, the API server (or the machine) is saturated.
func BenchmarkManagerThroughput(b *testing.B) {
	ctx := benchContext(b, 20*time.Minute)
	sw := webhookSwitch(ctx, b)
	for _, clients := range []int{1, 16, 32, 64} {
		b.Run(fmt.Sprintf("clients=%d", clients), func(b *testing.B) {
			bench.Throughput(ctx, b, unlimitedClient(b), sw, clients, 500, costs())
		})
	}
}

// costs charges the benchmark's work to the control plane's processes and to
// this one (the manager in process, and the benchmark's clients: the same in
// both modes, so a difference between modes is the manager's).
func costs() *bench.Costs {
	procs := map[string]int{"gpuvc+clients": 0}
	for name, pid := range env.cp.PIDs() {
		procs[name] = pid
	}
	c := &bench.Costs{Procs: procs, Metrics: env.cp.Client, Local: metrics.Registry}
	if dir := os.Getenv("BENCH_PROFILE_DIR"); dir != "" {
		c.Profile = profiler(dir)
	}
	return c
}

func webhookSwitch(ctx context.Context, b *testing.B) *bench.WebhookSwitch {
	sw, err := bench.NewWebhookSwitch(ctx, env.cp.Client, manager.WebhookConfigName, teamNS)
	if err != nil {
		b.Fatal(err)
	}
	// Whatever happens, the manager's webhook is on again for the next benchmark.
	b.Cleanup(func() {
		if err := sw.On(context.Background()); err != nil && !apierrors.IsAlreadyExists(err) {
			b.Error(err)
		}
	})
	return sw
}

// unlimitedClient returns a constructor of clients with their own connections
// and no client-side rate limit: the API server, not client-go, must be what
// saturates.
func unlimitedClient(b *testing.B) func() kubernetes.Interface {
	return func() kubernetes.Interface {
		cfg := rest.CopyConfig(env.cp.Config)
		cfg.QPS, cfg.Burst = -1, 0
		// A dialer of its own makes client-go build a transport per client (no
		// shared connection), as separate clients would have.
		cfg.Dial = (&net.Dialer{Timeout: 30 * time.Second}).DialContext
		c, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			b.Fatal(err)
		}
		return c
	}
}
