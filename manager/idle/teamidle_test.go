package idle_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpuvc/gpuvc/api/contract"
	gpuvcv1 "github.com/gpuvc/gpuvc/api/v1alpha1"
)

// TestIdleGPUPodsSleepTheWholeTeam: with action Sleep the reaper asks the idle
// loop to sleep the team (its gpuvc.dev/idle-request) once every GPU pod of
// the team has been idle for `after`, telling each pod why, and evicts nothing
// itself; while one GPU pod is busy, an idle pod is only notified and the team
// is not asked to sleep.
func TestIdleGPUPodsSleepTheWholeTeam(t *testing.T) {
	ctx := integration(t)
	ns := gpuPodTeam(ctx, t, "gpuidle-sleep", gpuvcv1.IdleActionSleep)
	util, r, clk, rec := reaperOfIdleAndBusy(ns)
	request := func() string {
		tm := &gpuvcv1.Team{}
		require.NoError(t, c.Get(ctx, client.ObjectKey{Name: "gpuidle-sleep"}, tm))
		return tm.Annotations[contract.AnnotationIdleRequest]
	}

	// One busy GPU pod: the idle one is told, the team is not slept.
	got := reapAfterTenMinutes(ctx, t, r, clk, rec)
	require.Len(t, got, 1, "one notice, for the idle pod only: %v", got)
	require.Contains(t, got[0], "it keeps running")
	require.Contains(t, got[0], "1 of its 2 GPU pod(s) are not idle long enough (1 busy)")
	require.Empty(t, request(), "a team with a busy GPU pod was asked to sleep")

	// The busy pod goes idle: ten minutes later the whole team is.
	util.set(ns, "busy", 0)
	got = reapAfterTenMinutes(ctx, t, r, clk, rec)
	require.Len(t, got, 2, "a GPUIdle for each GPU pod: %v", got)
	for _, e := range got {
		require.Contains(t, e, "(action Sleep)")
		require.Contains(t, e, "all 2 GPU pod(s) of the team have been idle for at least 10m0s")
	}
	require.Equal(t, contract.IdleRequestSleepIdleGPUs, request())
	p := &corev1.Pod{}
	for _, name := range []string{"idle", "busy"} {
		require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, p))
		require.Nil(t, p.DeletionTimestamp, "the reaper evicted %s itself; the idle loop does, after the scale to zero", name)
	}
	// Asked once per idle spell.
	clk.Step(time.Hour)
	r.Tick(ctx)
	require.Empty(t, drain(rec), "the team was asked twice")
}
