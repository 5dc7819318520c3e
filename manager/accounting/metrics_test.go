package accounting

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/common/expfmt"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

// The stale-accounting alert reads when every team was last sampled: a good
// sample sets it, a failing one leaves it, so the alert sees the time pass.
func TestLastGoodSampleIsExported(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(1_800_000_000, 0))
	c := fakeHost(t)
	a := New(c, c, Options{Clock: clk, Interval: 30 * time.Second})
	current.Store(a)
	t.Cleanup(func() { current.Store(nil) })
	reg := prometheus.NewRegistry()
	if err := Register(reg); err != nil {
		t.Fatal(err)
	}
	metric := func() string {
		b, err := testutil.CollectAndFormat(reg, expfmt.TypeTextPlain, "gpuvc_accounting_last_sample_timestamp_seconds", "gpuvc_accounting_interval_seconds")
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	if m := metric(); strings.Contains(m, "last_sample_timestamp_seconds ") || !strings.Contains(m, "gpuvc_accounting_interval_seconds 30") {
		t.Fatalf("before any sample:\n%s", m)
	}
	if err := a.Sample(context.Background()); err != nil {
		t.Fatal(err)
	}
	if m := metric(); !strings.Contains(m, "gpuvc_accounting_last_sample_timestamp_seconds 1.8e+09") {
		t.Fatalf("after a good sample:\n%s", m)
	}
	failing := interceptor.NewClient(c.(client.WithWatch), interceptor.Funcs{List: func(context.Context, client.WithWatch, client.ObjectList, ...client.ListOption) error {
		return context.DeadlineExceeded
	}})
	a.reader = failing
	clk.Step(time.Minute)
	if err := a.Sample(context.Background()); err == nil {
		t.Fatal("a sample whose pod list fails must fail")
	}
	if m := metric(); !strings.Contains(m, "gpuvc_accounting_last_sample_timestamp_seconds 1.8e+09") {
		t.Errorf("a failed sample moved the timestamp:\n%s", m)
	}
}
