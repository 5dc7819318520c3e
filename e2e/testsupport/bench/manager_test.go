package bench_test

import (
	"context"
	"testing"
	"time"

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

// BenchmarkManagerAdmission: pod creation in the team namespace (the manager's
// webhook, the CEL fence and the team's quota) against a plain namespace. CPU
// pods: the team's GPU quota would refuse GPU pods past 8.
func BenchmarkManagerAdmission(b *testing.B) {
	benchContext(b, time.Minute)
	bench.Admission(b, env.cp.Client, teamNS, plainNS, "")
}
