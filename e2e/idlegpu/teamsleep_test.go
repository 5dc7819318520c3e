package idlegpu_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gpuvcv1 "github.com/gpuvc/gpuvc/api/v1alpha1"
	"github.com/gpuvc/gpuvc/e2e/testsupport/poll"
	"github.com/gpuvc/gpuvc/e2e/testsupport/testobj"
	"github.com/gpuvc/gpuvc/kind/localcluster"
	"github.com/gpuvc/gpuvc/manager/idle"
)

// TestManagerSleepsAWholeIdleTeam: spec.idle.gpuPods.action Sleep. A team whose
// GPU pods are all idle for `after` (by the agent's metrics, as for Evict) is
// put to sleep through the idle loop's sleep path: its control plane (the
// vCluster chart's, installed by the manager) is scaled to zero, and every pod
// of the team is evicted, its pod without GPUs too (it did not keep the team
// awake); each GPU pod gets a GPUIdle Warning saying why, the Team an Asleep
// event and condition. A Sleep team with one busy GPU pod is never slept: its
// idle pod is only notified.
func TestManagerSleepsAWholeIdleTeam(t *testing.T) {
	ctx := integration(t)
	sleepNS, awakeNS := gpuvcv1.HostNamespace("idle-sleep"), gpuvcv1.HostNamespace("idle-awake")
	agent := serveAgent(t, []gpuOf{{sleepNS, "train", 0}, {sleepNS, "notebook", 3}, {awakeNS, "idle", 0}, {awakeNS, "busy", 70}})
	const agentNamespace = "gpuvc-agents-sleep" // not TestManagerActsOnIdleGPUPods's, which may still be terminating
	agent.RecordPod(ctx, t, c, agentNamespace)
	ports, err := localcluster.FreePorts(1)
	require.NoError(t, err)
	clk := startManager(ctx, t, agent, agentNamespace, idle.Options{RouteSettle: 100 * time.Millisecond,
		// The API server refuses a loopback address in an EndpointSlice: the
		// waker's slice names a documentation address; nothing connects to it here.
		WakerIP: "192.0.2.10", ListenHost: "127.0.0.1", Ports: idle.PortRange{First: int32(ports[0]), Last: int32(ports[0])}})

	sleepy := func(name string) *gpuvcv1.Team {
		return testobj.Team(name, "a100").GPUs(2).SleepAfter(12*time.Hour).IdleGPUPods(after, gpuvcv1.IdleActionSleep, 5).Obj()
	}
	createTeamWithGPUPods(ctx, t, sleepy("idle-sleep"), "train", "notebook")
	runPod(ctx, t, testobj.Pod("web", sleepNS).InPool("a100").Obj()) // no GPU, no utilization: does not keep the team awake
	createTeamWithGPUPods(ctx, t, sleepy("idle-awake"), "idle", "busy")

	looks := agent.Scrapes()
	poll.UntilSeen(ctx, t, 2*time.Minute, "team idle-sleep asleep with its pods evicted", func(context.Context) (bool, string, error) {
		// The test's context, not the poll's: a look cut short by the poll's
		// deadline would fail the test before the poll says what it last saw.
		if n := agent.Scrapes(); n > looks {
			looks = n
			clk.Step(time.Minute)
		}
		cond, replicas := asleep(ctx, t, "idle-sleep")
		var left []string
		for _, name := range []string{"train", "notebook", "web"} {
			if g, _ := gone(ctx, sleepNS, name); !g {
				left = append(left, name)
			}
		}
		return cond != nil && cond.Status == metav1.ConditionTrue && replicas == 0 && len(left) == 0,
			fmt.Sprintf("Asleep %v, control plane at %d replicas, pods not evicted %v, %d looks; Team events: %v",
				cond, replicas, left, looks, teamEvents(ctx, "idle-sleep")), nil
	})

	cond, _ := asleep(ctx, t, "idle-sleep")
	t.Logf("idle-sleep: Asleep %s %q", cond.Reason, cond.Message)
	require.Equal(t, gpuvcv1.ReasonAsleep, cond.Reason)
	require.Contains(t, cond.Message, "every GPU pod of the team stayed at or below 5% GPU utilization for 5m0s (spec.idle.gpuPods.action Sleep)")
	require.Contains(t, cond.Message, "3 team pod(s) evicted")
	teamEv, err := cs.CoreV1().Events("").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.kind=Team,involvedObject.name=idle-sleep,reason=Asleep"})
	require.NoError(t, err)
	require.Len(t, teamEv.Items, 1, "one Asleep event on the Team")
	require.Contains(t, teamEv.Items[0].Message, "scaled to zero: put to sleep: every GPU pod of the team")
	for _, name := range []string{"train", "notebook"} {
		ev := gpuIdleEvents(ctx, t, sleepNS, name)
		require.Len(t, ev, 1, "one GPUIdle event on %s/%s", sleepNS, name)
		t.Logf("%s/%s: %s %q", sleepNS, name, ev[0].Type, ev[0].Message)
		require.Equal(t, corev1.EventTypeWarning, ev[0].Type)
		require.Contains(t, ev[0].Message, "all 2 GPU pod(s) of the team have been idle for at least 5m0s")
		require.Contains(t, ev[0].Message, "its vCluster is put to sleep (action Sleep)")
		require.GreaterOrEqual(t, idleFor(t, ev[0].Message), after, "acted before spec.idle.gpuPods.after: %q", ev[0].Message)
	}
	require.Empty(t, gpuIdleEvents(ctx, t, sleepNS, "web"), "GPUIdle on a pod without GPUs")

	// The team with a busy GPU pod: its idle pod was told (it reached `after`
	// with the other team's), then two more looks a minute apart; nothing sleeps.
	twoMoreLooks(ctx, t, agent, clk)
	ev := gpuIdleEvents(ctx, t, awakeNS, "idle")
	require.Len(t, ev, 1, "one GPUIdle notice on %s/idle", awakeNS)
	t.Logf("%s/idle: %s %q", awakeNS, ev[0].Type, ev[0].Message)
	require.Contains(t, ev[0].Message, "it keeps running")
	require.Contains(t, ev[0].Message, "1 of its 2 GPU pod(s) are not idle long enough (1 busy)")
	require.Empty(t, gpuIdleEvents(ctx, t, awakeNS, "busy"), "GPUIdle on the busy pod")
	p := &corev1.Pod{}
	for _, name := range []string{"idle", "busy"} {
		require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: awakeNS, Name: name}, p))
		require.Nil(t, p.DeletionTimestamp, "%s/%s of the team with a busy GPU pod was evicted", awakeNS, name)
	}
	cond, replicas := asleep(ctx, t, "idle-awake")
	require.False(t, cond != nil && cond.Status == metav1.ConditionTrue, "team idle-awake asleep: %v", cond)
	require.Equal(t, int32(1), replicas, "team idle-awake's control plane scaled")
}

// asleep is the team's Asleep condition (nil until the idle loop wrote one) and
// its control plane's replicas (the chart's Deployment with an ephemeral
// datastore, else its StatefulSet; -1 when neither exists yet).
func asleep(ctx context.Context, t *testing.T, team string) (*metav1.Condition, int32) {
	t.Helper()
	tm := &gpuvcv1.Team{}
	require.NoError(t, c.Get(ctx, client.ObjectKey{Name: team}, tm))
	cond := apimeta.FindStatusCondition(tm.Status.Conditions, gpuvcv1.ConditionAsleep)
	key := client.ObjectKey{Namespace: gpuvcv1.HostNamespace(team), Name: gpuvcv1.ReleaseName(tm)}
	dep := &appsv1.Deployment{}
	err := c.Get(ctx, key, dep)
	if err == nil {
		return cond, ptr.Deref(dep.Spec.Replicas, 1)
	}
	require.True(t, apierrors.IsNotFound(err), "reading Deployment %v: %v", key, err)
	sts := &appsv1.StatefulSet{}
	if err := c.Get(ctx, key, sts); err != nil {
		require.True(t, apierrors.IsNotFound(err), "reading StatefulSet %v: %v", key, err)
		return cond, -1
	}
	return cond, ptr.Deref(sts.Spec.Replicas, 1)
}

// teamEvents are the reasons and messages of the events on the Team, for a
// failure's message.
func teamEvents(ctx context.Context, team string) []string {
	l, err := cs.CoreV1().Events("").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.kind=Team,involvedObject.name=" + team})
	if err != nil {
		return []string{err.Error()}
	}
	var got []string
	for _, e := range l.Items {
		got = append(got, e.Reason+": "+e.Message)
	}
	return got
}
