package accounting

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpuvc/gpuvc/api/contract"
)

// The node agent's cumulative GPU-seconds lost per team (annotation
// gpuvc.dev/gpu-seconds-lost) reach the team's ledger as kind
// lost-to-gpu-failure: each increase once, across a restarted manager (the
// checkpoint remembers what was credited), a reset annotation credited whole;
// the team's Total and gpuvc_team_gpu_seconds_total leave it out (that time
// was held and is counted there already), its own counter shows it.
func TestAccountantCreditsGPUSecondsLost(t *testing.T) {
	ctx := context.Background()
	c := fakeHost(t)
	clk := clocktesting.NewFakeClock(time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC))
	opts := Options{Clock: clk, Interval: time.Minute, StatusInterval: time.Minute}
	setLost := func(v string) {
		t.Helper()
		n := &corev1.Node{}
		must(t, c.Get(ctx, client.ObjectKey{Name: "a100-0"}, n))
		n.Annotations = map[string]string{contract.AnnotationGPUSecondsLost: v}
		must(t, c.Update(ctx, n))
	}
	lost := Key{"a100", KindLost}

	setLost(`{"ml": 600, "other": 50}`)
	a := New(c, c, opts)
	must(t, a.Sample(ctx))
	clk.Step(10 * time.Minute)
	must(t, a.Sample(ctx)) // unchanged: nothing more
	want := map[string]Seconds{"ml": {whole: 1200, lost: 600}}
	if d := cmp.Diff(want, a.Totals(), approx); d != "" {
		t.Errorf("totals (-want +got):\n%s", d)
	}
	if s := teamStatus(t, c); s.Total != 1200 {
		t.Errorf("status total %d, want 1200 (GPU time lost is part of what was held)", s.Total)
	}

	setLost(`{"ml": 900}`)
	clk.Step(time.Minute)
	must(t, a.Sample(ctx))
	// A new manager continues from the checkpoint: 900 was credited already.
	b := New(c, c, opts)
	clk.Step(time.Minute)
	must(t, b.Sample(ctx))
	if got := b.Totals()["ml"][lost]; got != 900 {
		t.Errorf("lost after a restart %v, want 900", got)
	}
	// The annotation started again (a node replaced): its value is new loss.
	setLost(`{"ml": 100}`)
	clk.Step(time.Minute)
	must(t, b.Sample(ctx))
	if got := b.Totals()["ml"][lost]; got != 1000 {
		t.Errorf("lost after a reset annotation %v, want 1000", got)
	}

	reg := prometheus.NewRegistry()
	must(t, reg.Register(collector{}))
	current.Store(b)
	if n, err := testutil.GatherAndCount(reg, "gpuvc_team_gpu_seconds_lost_to_gpu_failure_total"); err != nil || n != 1 {
		t.Errorf("lost series: %d, %v", n, err)
	}
	err := testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP gpuvc_team_gpu_seconds_lost_to_gpu_failure_total GPU time the team's pods drained for a failed GPU had held since they started (work lost to GPU failures), by pool; also counted in gpuvc_team_gpu_seconds_total, where it was held.
# TYPE gpuvc_team_gpu_seconds_lost_to_gpu_failure_total counter
gpuvc_team_gpu_seconds_lost_to_gpu_failure_total{pool="a100",team="ml"} 1000
`), "gpuvc_team_gpu_seconds_lost_to_gpu_failure_total")
	if err != nil {
		t.Error(err)
	}
	if n, _ := testutil.GatherAndCount(reg, "gpuvc_team_gpu_seconds_total"); n != 1 {
		t.Errorf("gpuvc_team_gpu_seconds_total has %d series, want 1 (whole): lost is not a kind of it", n)
	}
}
