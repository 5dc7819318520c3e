package teamctl_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gpuvcv1 "github.com/gpuvc/gpuvc/api/v1alpha1"
	"github.com/gpuvc/gpuvc/manager/teamctl"
)

// setReady writes a Ready condition as the manager would.
func setReady(t *testing.T, ctx context.Context, raw client.Client, name string, status metav1.ConditionStatus, reason, msg string) {
	t.Helper()
	cur := &gpuvcv1.Team{}
	require.NoError(t, raw.Get(ctx, client.ObjectKey{Name: name}, cur))
	apimeta.SetStatusCondition(&cur.Status.Conditions, metav1.Condition{Type: gpuvcv1.ConditionReady, Status: status, Reason: reason, Message: msg})
	cur.Status.ObservedGeneration = cur.Generation
	require.NoError(t, raw.Status().Update(ctx, cur))
}

// recorder collects progress events.
type recorder struct {
	mu     sync.Mutex
	events []teamctl.Event
}

func (r *recorder) progress(e teamctl.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
}

func (r *recorder) notes() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var b strings.Builder
	for _, e := range r.events {
		if e.Condition == nil {
			b.WriteString(e.Note + "\n")
		}
	}
	return b.String()
}

func TestWaitReadyReturnsOnceReady(t *testing.T) {
	ctx, tc, raw := integration(t)
	newTeam(t, ctx, tc, raw, "becomes-ready")
	setReady(t, ctx, raw, "becomes-ready", metav1.ConditionFalse, "VClusterStarting", "1/2 pods ready")
	tc.Timing = teamctl.Timing{Interval: 100 * time.Millisecond}
	rec := &recorder{}
	var once sync.Once
	got, err := tc.WaitReady(ctx, "becomes-ready", time.Minute, func(e teamctl.Event) {
		rec.progress(e)
		// The manager's next step comes after the wait has seen the first one.
		once.Do(func() {
			go setReady(t, ctx, raw, "becomes-ready", metav1.ConditionTrue, "Ready", "ok")
		})
	})
	require.NoError(t, err)
	require.True(t, apimeta.IsStatusConditionTrue(got.Status.Conditions, gpuvcv1.ConditionReady))
	require.Len(t, rec.events, 2, "one event per change: Starting, then Ready")
}

func TestWaitReadyStopsAtOnceOnAPermanentReason(t *testing.T) {
	ctx, tc, raw := integration(t)
	newTeam(t, ctx, tc, raw, "invalid")
	setReady(t, ctx, raw, "invalid", metav1.ConditionFalse, "InvalidSpec", "spec.quota.mig[1g.7gb]: no known GPU model offers it")
	start := time.Now()
	_, err := tc.WaitReady(ctx, "invalid", time.Minute, nil)
	require.Less(t, time.Since(start), 10*time.Second, "waited although the reason is permanent")
	require.ErrorContains(t, err, "team invalid not ready after")
	require.ErrorContains(t, err, "InvalidSpec: spec.quota.mig[1g.7gb]")
	require.ErrorContains(t, err, "the manager does not retry until it changes")
}

func TestWaitReadyEndsOnAFailureThatKeepsRepeating(t *testing.T) {
	ctx, tc, raw := integration(t)
	newTeam(t, ctx, tc, raw, "nochart")
	setReady(t, ctx, raw, "nochart", metav1.ConditionFalse, "ReleaseFailed", "loading chart vcluster 0.0.1: no such chart")
	tc.Timing = teamctl.Timing{Interval: 100 * time.Millisecond, FailAfter: time.Second}
	start := time.Now()
	_, err := tc.WaitReady(ctx, "nochart", time.Minute, nil)
	require.Less(t, time.Since(start), 15*time.Second)
	require.ErrorContains(t, err, "team nochart not ready after")
	require.ErrorContains(t, err, "ReleaseFailed: loading chart vcluster 0.0.1")
	require.ErrorContains(t, err, "has not changed for 1s")
}

func TestWaitReadyWithoutAManagerSaysSo(t *testing.T) {
	ctx, tc, raw := integration(t)
	newTeam(t, ctx, tc, raw, "orphan")
	tc.Timing = teamctl.Timing{Interval: 50 * time.Millisecond, NoManager: 300 * time.Millisecond, Heartbeat: 400 * time.Millisecond}
	rec := &recorder{}
	_, err := tc.WaitReady(ctx, "orphan", 1500*time.Millisecond, rec.progress)
	require.EqualError(t, err, "team orphan not ready after 1.5s: no gpuvc manager has reported on team orphan: is it running? Install it with `gpuvc install`, or run `gpuvc manager` against this cluster")
	require.Contains(t, rec.notes(), "no gpuvc manager has reported on team orphan after", "warned while waiting")
	require.Contains(t, rec.notes(), "still waiting: no gpuvc manager", "heartbeat")
}

// TestWaitReadyAlwaysEndsWithItsOwnMessage: client-go's rate limiter used to
// surface at the deadline ("rate: Wait(n=1) would exceed context deadline") in
// about half of the runs.
func TestWaitReadyAlwaysEndsWithItsOwnMessage(t *testing.T) {
	ctx, tc, raw := integration(t)
	newTeam(t, ctx, tc, raw, "slow")
	setReady(t, ctx, raw, "slow", metav1.ConditionFalse, "VClusterStarting", "0/1 pods ready")
	tc.Timing = teamctl.Timing{Interval: 10 * time.Millisecond}
	for i := 0; i < 8; i++ {
		timeout := time.Duration(200+37*i) * time.Millisecond
		_, err := tc.WaitReady(ctx, "slow", timeout, nil)
		require.EqualError(t, err, fmt.Sprintf("team slow not ready after %s: VClusterStarting: 0/1 pods ready", timeout), "run %d", i)
	}
}

func TestWaitDeletedSaysWhatHoldsTheTeam(t *testing.T) {
	ctx, tc, raw := integration(t)
	team := newTeam(t, ctx, tc, raw, "held")
	cur := &gpuvcv1.Team{}
	require.NoError(t, raw.Get(ctx, client.ObjectKeyFromObject(team), cur))
	cur.Finalizers = []string{gpuvcv1.Finalizer}
	require.NoError(t, raw.Update(ctx, cur))
	existed, err := tc.Delete(ctx, "held")
	require.NoError(t, err)
	require.True(t, existed)

	tc.Timing = teamctl.Timing{Interval: 50 * time.Millisecond}
	err = tc.WaitDeleted(ctx, "held", 500*time.Millisecond, nil)
	require.ErrorContains(t, err, "team held not deleted after 500ms: Finalizing: the manager uninstalls the vCluster release and deletes namespace team-held")

	require.NoError(t, raw.Get(ctx, client.ObjectKeyFromObject(team), cur))
	cur.Finalizers = nil
	require.NoError(t, raw.Update(ctx, cur))
	require.NoError(t, tc.WaitDeleted(ctx, "held", 30*time.Second, nil))
}
