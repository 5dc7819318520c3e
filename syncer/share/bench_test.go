package share_test

import (
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/gpuvc/gpuvc/e2e/localcp"
	"github.com/gpuvc/gpuvc/e2e/testsupport/bench"
	"github.com/gpuvc/gpuvc/e2e/testsupport/poll"
	"github.com/gpuvc/gpuvc/syncer/share"
)

// The measurements live in e2e/testsupport/bench, which also runs them through gpuvc's
// manager; here they run against this package's controller and webhook.

// BenchmarkUngateLatency: create → gate removed for one 0.1 pod at a time
// (bench.UngateLatency).
func BenchmarkUngateLatency(b *testing.B) {
	localcp.ForTest(b)
	ctx := poll.Context(b, 10*time.Minute)
	tm := team(newTeam(ctx, b, "bench-latency", 8), 8)
	tm.Local, tm.Controller = metrics.Registry, share.ControllerName
	bench.UngateLatency(ctx, b, tm)
}

// BenchmarkBurst: bursts of share pods summing to at most 7 GPUs, quota 8
// (bench.Burst): pods/s, latency, reservations against the lower bound.
func BenchmarkBurst(b *testing.B) {
	localcp.ForTest(b)
	ctx := poll.Context(b, 20*time.Minute)
	tm := team(newTeam(ctx, b, "bench-burst", 8), 8)
	tm.Local, tm.Controller = metrics.Registry, share.ControllerName
	bench.Burst(ctx, b, tm)
}
