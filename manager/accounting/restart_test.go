package accounting_test

import (
	"context"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/wait"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	gpuvcv1 "github.com/gpuvc/gpuvc/api/v1alpha1"
	"github.com/gpuvc/gpuvc/e2e/testsupport/managertest"
	"github.com/gpuvc/gpuvc/e2e/testsupport/testobj"
	"github.com/gpuvc/gpuvc/manager/accounting"
	"github.com/gpuvc/gpuvc/manager/teamctl"
)

const interval = time.Minute

// run starts the manager with the accountant on clk.
func run(ctx context.Context, t *testing.T, clk *clocktesting.FakeClock) *managertest.Manager {
	t.Helper()
	mgr, err := managertest.StartWith(ctx, host, managertest.Options{Accounting: accounting.Options{
		Clock: clk, Interval: interval, StatusInterval: interval}})
	require.NoError(t, err)
	return mgr
}

func key(pool, kind string) accounting.Key { return accounting.Key{Pool: pool, Kind: kind} }

// ledgers reads the checkpoints of the given (existing) teams.
func ledgers(ctx context.Context, teams ...string) (map[string]*accounting.Ledger, error) {
	out := map[string]*accounting.Ledger{}
	for _, tm := range teams {
		team := &gpuvcv1.Team{}
		if err := c.Get(ctx, client.ObjectKey{Name: tm}, team); err != nil {
			return nil, err
		}
		cm := &corev1.ConfigMap{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: accounting.DefaultNamespace, Name: accounting.LedgerName(tm, team.UID)}, cm); err != nil {
			return nil, err
		}
		l, err := accounting.DecodeLedger(cm)
		if err != nil {
			return nil, err
		}
		out[tm] = l
	}
	return out, nil
}

// sampled steps clk until the checkpoints of every team are at clk's time and
// satisfy ok; it steps only while the accountant waits, so no step is lost.
func sampled(ctx context.Context, t *testing.T, clk *clocktesting.FakeClock, ok func(map[string]*accounting.Ledger) bool, teams ...string) map[string]*accounting.Ledger {
	t.Helper()
	var got map[string]*accounting.Ledger
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		if !clk.HasWaiters() {
			return false, nil // sampling
		}
		l, err := ledgers(ctx, teams...)
		if apierrors.IsNotFound(err) {
			clk.Step(interval)
			return false, nil
		}
		if err != nil {
			return false, err
		}
		for _, x := range l {
			if !x.SampledAt.Equal(clk.Now()) {
				return false, nil
			}
		}
		if ok(l) {
			got = l
			return true, nil
		}
		clk.Step(interval)
		return false, nil
	})
	require.NoError(t, err, "last checkpoints: %+v", got)
	return got
}

// at waits for the sample the accountant takes at clk's current time.
func at(ctx context.Context, t *testing.T, clk *clocktesting.FakeClock, teams ...string) map[string]*accounting.Ledger {
	t.Helper()
	var got map[string]*accounting.Ledger
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		l, err := ledgers(ctx, teams...)
		if err != nil {
			return false, client.IgnoreNotFound(err)
		}
		for _, x := range l {
			if !x.SampledAt.Equal(clk.Now()) {
				return false, nil
			}
		}
		got = l
		return clk.HasWaiters(), nil
	})
	require.NoError(t, err)
	return got
}

func sameRates(want map[string]accounting.Rates) func(map[string]*accounting.Ledger) bool {
	return func(l map[string]*accounting.Ledger) bool {
		for tm, w := range want {
			if len(l[tm].Rates) != len(w) {
				return false
			}
			for k, v := range w {
				if math.Abs(l[tm].Rates[k]-v) > 1e-9 {
					return false
				}
			}
		}
		return true
	}
}

// requireTotals checks every team's totals against base + rate × seconds.
func requireTotals(t *testing.T, got, base map[string]*accounting.Ledger, rates map[string]accounting.Rates, seconds float64) {
	t.Helper()
	for tm, r := range rates {
		for k, v := range r {
			want := base[tm].Totals[k] + v*seconds
			require.InDelta(t, want, got[tm].Totals[k], 1e-3, "team %s %s", tm, k)
		}
	}
}

// metricValue reads gpuvc_team_gpu_seconds_total from the manager's registry.
func metricValue(t *testing.T, team string, k accounting.Key) float64 {
	t.Helper()
	families, err := metrics.Registry.Gather()
	require.NoError(t, err)
	for _, f := range families {
		if f.GetName() != "gpuvc_team_gpu_seconds_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["team"] == team && labels["pool"] == k.Pool && labels["kind"] == k.Kind {
				return m.GetCounter().GetValue()
			}
		}
	}
	t.Fatalf("no gpuvc_team_gpu_seconds_total{team=%q,pool=%q,kind=%q}", team, k.Pool, k.Kind)
	return 0
}

func createTeam(ctx context.Context, t *testing.T, tm *gpuvcv1.Team) {
	t.Helper()
	require.NoError(t, c.Create(ctx, tm))
	t.Cleanup(func() { _ = c.Delete(context.Background(), tm) })
}

// createPod creates a pod once the team's namespace admits it (the webhook needs
// the namespace and the Team's policy) and waits until it holds its GPUs.
func createPod(ctx context.Context, t *testing.T, pod *corev1.Pod) {
	t.Helper()
	var last error
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		last = c.Create(ctx, pod.DeepCopy())
		return last == nil || apierrors.IsAlreadyExists(last), nil
	})
	require.NoError(t, err, "creating pod %s/%s: %v", pod.Namespace, pod.Name, last)
}

// waitHolding waits until the namespace has n GPU pods bound and running.
func waitHolding(ctx context.Context, t *testing.T, namespace string, n int) {
	t.Helper()
	var desc string
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		pods := &corev1.PodList{}
		if err := c.List(ctx, pods, client.InNamespace(namespace)); err != nil {
			return false, err
		}
		held := 0
		desc = ""
		for i := range pods.Items {
			p := &pods.Items[i]
			desc += fmt.Sprintf(" %s(node=%q phase=%s)", p.Name, p.Spec.NodeName, p.Status.Phase)
			gpus := accounting.TeamRates([]corev1.Pod{*p}, nil, "any") // not the vCluster's own pods
			if accounting.Holds(p) && p.Status.Phase == corev1.PodRunning && len(gpus) > 0 {
				held++
			}
		}
		return held == n, nil
	})
	require.NoError(t, err, "pods of %s:%s", namespace, desc)
}

// TestGPUSecondsSurviveRestart runs whole-GPU, MIG and fractional pods of two
// teams for fake hours, restarts the manager and checks that the totals in the
// checkpoints, the Team status and the counter continue.
func TestGPUSecondsSurviveRestart(t *testing.T) {
	ctx := integration(t)
	start := time.Now().Add(-12 * time.Hour).Truncate(time.Hour).Add(10 * time.Minute)
	clk := clocktesting.NewFakeClock(start)
	mgr := run(ctx, t, clk)
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			_ = mgr.Stop()
		}
	})

	createTeam(ctx, t, testobj.Team("acct-a", "a100").GPUs(2).MIG("3g.40gb", 1).Obj())
	createTeam(ctx, t, testobj.Team("acct-b", "a100").GPUs(1).Fractions().Obj())
	createPod(ctx, t, testobj.Pod("train", "team-acct-a").GPUs("1").Obj())
	createPod(ctx, t, testobj.Pod("notebook", "team-acct-a").MIG("3g.40gb", "1").Obj())
	createPod(ctx, t, testobj.Pod("half", "team-acct-b").GPUFraction("0.5").Obj())
	waitHolding(ctx, t, "team-acct-a", 2)
	waitHolding(ctx, t, "team-acct-b", 2) // the share pod and its reservation

	rates := map[string]accounting.Rates{
		"acct-a": {key("a100", accounting.KindWhole): 1, key("a100", accounting.KindMIG): 3.0 / 7},
		"acct-b": {key("a100", accounting.KindFraction): 0.5, key("a100", accounting.KindReserved): 0.5},
	}
	base := sampled(ctx, t, clk, sameRates(rates), "acct-a", "acct-b")

	// Two fake hours with everything held.
	clk.Step(2 * time.Hour)
	got := at(ctx, t, clk, "acct-a", "acct-b")
	requireTotals(t, got, base, rates, 7200)
	for tm, r := range rates {
		for k := range r {
			require.InDelta(t, got[tm].Totals[k], metricValue(t, tm, k), 1e-6, "metric of %s %s", tm, k)
		}
	}
	require.Eventually(t, func() bool {
		tm := &gpuvcv1.Team{}
		if err := c.Get(ctx, client.ObjectKey{Name: "acct-a"}, tm); err != nil || tm.Status.GPUSeconds == nil {
			return false
		}
		s := tm.Status.GPUSeconds
		whole := int64(math.Floor(got["acct-a"].Totals[key("a100", accounting.KindWhole)]))
		return s.SampledAt.Time.Equal(clk.Now()) && len(s.ByKind) == 2 &&
			s.ByKind[1].Kind == accounting.KindWhole && s.ByKind[1].Seconds == whole &&
			s.Total == int64(math.Floor(got["acct-a"].Totals.Total()))
	}, time.Minute, 100*time.Millisecond, "status.gpuSeconds of acct-a")

	// The manager stops; a new one starts 30 fake minutes later. The pods held their
	// GPUs all along, so the gap counts, and counting goes on from there.
	require.NoError(t, mgr.Stop())
	stopped = true
	clk2 := clocktesting.NewFakeClock(clk.Now().Add(30 * time.Minute))
	mgr = run(ctx, t, clk2)
	stopped = false
	got = at(ctx, t, clk2, "acct-a", "acct-b")
	requireTotals(t, got, base, rates, 7200+1800)
	clk2.Step(time.Hour)
	got = at(ctx, t, clk2, "acct-a", "acct-b")
	requireTotals(t, got, base, rates, 7200+1800+3600)
	require.InDelta(t, got["acct-b"].Totals[key("a100", accounting.KindFraction)],
		metricValue(t, "acct-b", key("a100", accounting.KindFraction)), 1e-6, "the counter continues after the restart")

	// What `gpuvc team usage` reads agrees with the checkpoints.
	tc, err := teamctl.New(host.Config)
	require.NoError(t, err)
	u, err := tc.Usage(ctx, accounting.DefaultNamespace, 0, time.Now())
	require.NoError(t, err)
	hours := map[string]float64{}
	for _, r := range u.Rows {
		hours[r.Team+" "+r.Pool+"/"+r.Kind] = r.GPUHours
	}
	for tm, r := range rates {
		for k := range r {
			require.InDelta(t, got[tm].Totals[k]/3600, hours[tm+" "+k.String()], 1e-9, "usage of %s %s", tm, k)
		}
	}

	// A pod that stops is counted until the first sample that no longer sees it.
	require.NoError(t, c.Delete(ctx, testobj.Pod("train", "team-acct-a").Obj(), client.GracePeriodSeconds(0)))
	waitHolding(ctx, t, "team-acct-a", 1)
	before := got
	after := sampled(ctx, t, clk2, sameRates(map[string]accounting.Rates{
		"acct-a": {key("a100", accounting.KindMIG): 3.0 / 7}}), "acct-a")
	clk2.Step(time.Hour)
	got = at(ctx, t, clk2, "acct-a")
	whole := key("a100", accounting.KindWhole)
	require.InDelta(t, after["acct-a"].Totals[whole], got["acct-a"].Totals[whole], 1e-9, "a stopped pod counts no more")
	require.LessOrEqual(t, after["acct-a"].Totals[whole]-before["acct-a"].Totals[whole], float64(interval/time.Second)*1.001,
		"a stopped pod counts at most one interval after it stopped")
}
