package idlegpu_test

import (
	"context"
	"fmt"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gpuvcv1 "github.com/gpuvc/gpuvc/api/v1alpha1"
	"github.com/gpuvc/gpuvc/e2e/testsupport/fakeagent"
	"github.com/gpuvc/gpuvc/e2e/testsupport/managertest"
	"github.com/gpuvc/gpuvc/e2e/testsupport/poll"
	"github.com/gpuvc/gpuvc/e2e/testsupport/testobj"
	"github.com/gpuvc/gpuvc/gpu/nodeagent"
	"github.com/gpuvc/gpuvc/gpu/usage"
	"github.com/gpuvc/gpuvc/manager"
	"github.com/gpuvc/gpuvc/manager/idle"
)

const (
	agentNS = "gpuvc-system"
	after   = 5 * time.Minute // the least spec.idle.gpuPods.after the API accepts
)

// TestManagerActsOnIdleGPUPods: with --agent-metrics-port and --agent-namespace
// the manager finds the agent pod by the chart's labels, scrapes it, and after
// spec.idle.gpuPods.after warns on the pod its agent reports idle (a GPUIdle
// Warning event on the host pod, which vCluster copies to the team's pod) and,
// with Evict, evicts it; with Notify the pod keeps running; a busy pod of the
// same team is never touched.
func TestManagerActsOnIdleGPUPods(t *testing.T) {
	ctx := integration(t)
	evictNS, notifyNS := gpuvcv1.HostNamespace("idle-evict"), gpuvcv1.HostNamespace("idle-notify")
	agent := serveAgent(t, []gpuOf{{evictNS, "idle", 0}, {evictNS, "busy", 90}, {notifyNS, "idle", 0}, {notifyNS, "busy", 60}})
	agent.RecordPod(ctx, t, c, agentNS)
	clk := startManager(ctx, t, agent, agentNS, idle.Options{})

	for team, action := range map[string]string{"idle-evict": gpuvcv1.IdleActionEvict, "idle-notify": gpuvcv1.IdleActionNotify} {
		createTeamWithGPUPods(ctx, t, testobj.Team(team, "a100").GPUs(2).IdleGPUPods(after, action, 5).Obj(), "idle", "busy")
	}

	// Each look of the manager (one scrape of the agent) happens a minute later
	// on the idle policy's clock than the one before.
	looks := agent.Scrapes()
	poll.UntilSeen(ctx, t, 3*time.Minute, "the manager evicting "+evictNS+"/idle and warning on both idle pods", func(ctx context.Context) (bool, string, error) {
		if n := agent.Scrapes(); n > looks {
			looks = n
			clk.Step(time.Minute)
		}
		evicted, _ := gone(ctx, evictNS, "idle")
		evictEv, notifyEv := gpuIdleEvents(ctx, t, evictNS, "idle"), gpuIdleEvents(ctx, t, notifyNS, "idle")
		return evicted && len(evictEv) > 0 && len(notifyEv) > 0,
			fmt.Sprintf("evicted %v, GPUIdle events: %d on %s/idle, %d on %s/idle, %d looks", evicted, len(evictEv), evictNS, len(notifyEv), notifyNS, looks), nil
	})

	for ns, action := range map[string]string{evictNS: "action Evict", notifyNS: "action Notify"} {
		ev := gpuIdleEvents(ctx, t, ns, "idle")
		require.Len(t, ev, 1, "one GPUIdle event on %s/idle", ns)
		t.Logf("%s/idle: %s %s %q (from %s)", ns, ev[0].Type, ev[0].Reason, ev[0].Message, ev[0].ReportingController)
		require.Equal(t, corev1.EventTypeWarning, ev[0].Type)
		require.Contains(t, ev[0].Message, "at or below 5% utilization (now 0%)")
		require.Contains(t, ev[0].Message, action)
		require.GreaterOrEqual(t, idleFor(t, ev[0].Message), after, "acted before spec.idle.gpuPods.after: %q", ev[0].Message)
	}
	p := &corev1.Pod{}
	require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: notifyNS, Name: "idle"}, p))
	require.Nil(t, p.DeletionTimestamp, "Notify must leave the idle pod running")

	// Two more looks, a minute apart each: the busy pods stay, untouched.
	twoMoreLooks(ctx, t, agent, clk)
	for _, ns := range []string{evictNS, notifyNS} {
		require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "busy"}, p))
		require.Nil(t, p.DeletionTimestamp, "busy pod %s/busy was touched", ns)
		require.Empty(t, gpuIdleEvents(ctx, t, ns, "busy"), "GPUIdle on busy pod %s/busy", ns)
	}
}

// gpuOf is one GPU of the fake agent: the pod the kubelet gave it and its utilization.
type gpuOf struct {
	namespace, pod string
	percent        float64
}

// serveAgent serves the agent's own collector on node gpu-1 with one 80 GB GPU
// per entry, GPU-<i>, owned by its pod.
func serveAgent(t *testing.T, gpus []gpuOf) *fakeagent.Agent {
	t.Helper()
	samples := make([]usage.Sample, len(gpus))
	owners := map[string]nodeagent.DeviceOwner{}
	for i, g := range gpus {
		uuid := fmt.Sprintf("GPU-%d", i)
		samples[i] = usage.Sample{UUID: uuid, GPU: i, UtilizationPercent: fakeagent.Percent(g.percent), MemoryTotalBytes: 80 << 30}
		owners[uuid] = nodeagent.DeviceOwner{Namespace: g.namespace, Pod: g.pod, Container: "main", Resource: "nvidia.com/gpu"}
	}
	return fakeagent.Serve(t, "gpu-1", samples, owners)
}

// startManager runs the manager (stopped when the test ends) scraping agent's
// pod in agentNamespace, its idle policy on a fake clock it returns, looking
// every 250 ms; opts adds to those.
func startManager(ctx context.Context, t *testing.T, agent *fakeagent.Agent, agentNamespace string, opts idle.Options) *clocktesting.FakeClock {
	t.Helper()
	clk := clocktesting.NewFakeClock(time.Now())
	opts.Clock, opts.Interval = clk, 250*time.Millisecond
	mgr, err := managertest.StartWith(ctx, cp, managertest.Options{
		Idle:         opts,
		AgentMetrics: manager.AgentMetrics{Port: agent.Port, Namespace: agentNamespace},
	})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, mgr.Stop()) })
	return clk
}

// twoMoreLooks waits for two more looks of the manager, moving its idle clock a
// minute after each.
func twoMoreLooks(ctx context.Context, t *testing.T, agent *fakeagent.Agent, clk *clocktesting.FakeClock) {
	t.Helper()
	for range 2 {
		before := agent.Scrapes()
		poll.UntilSeen(ctx, t, time.Minute, "another look of the manager", func(context.Context) (bool, string, error) {
			n := agent.Scrapes()
			return n > before+1, fmt.Sprintf("%d scrapes", n), nil
		})
		clk.Step(time.Minute)
	}
}

// createTeamWithGPUPods creates tm (deleted, and waited for, when the test
// ends, before the manager stops: its finalizer is the manager's) and, once the
// manager has provisioned its namespace and the webhook admits them, the named
// pods with a GPU each, running on a kwok node.
func createTeamWithGPUPods(ctx context.Context, t *testing.T, tm *gpuvcv1.Team, pods ...string) {
	t.Helper()
	require.NoError(t, c.Create(ctx, tm))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		_ = c.Delete(ctx, tm)
		poll.Until(ctx, t, 2*time.Minute, "team "+tm.Name+" deleted", func(ctx context.Context) (bool, error) {
			err := c.Get(ctx, client.ObjectKeyFromObject(tm), &gpuvcv1.Team{})
			return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
		})
	})
	ns := gpuvcv1.HostNamespace(tm.Name)
	for _, name := range pods {
		runPod(ctx, t, testobj.Pod(name, ns).GPUs("1").InPool("a100").Obj())
	}
}

// runPod creates p once the webhook admits it and waits until it runs.
func runPod(ctx context.Context, t *testing.T, p *corev1.Pod) {
	t.Helper()
	poll.UntilSeen(ctx, t, 2*time.Minute, "pod "+p.Namespace+"/"+p.Name+" admitted", func(ctx context.Context) (bool, string, error) {
		err := c.Create(ctx, p.DeepCopy())
		return err == nil || apierrors.IsAlreadyExists(err), fmt.Sprint(err), nil
	})
	poll.Pod(ctx, t, cs, p.Namespace, p.Name, func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning })
}

func gone(ctx context.Context, ns, name string) (bool, error) {
	p := &corev1.Pod{}
	err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, p)
	if apierrors.IsNotFound(err) {
		return true, nil
	}
	return err == nil && p.DeletionTimestamp != nil, err
}

// gpuIdleEvents are the GPUIdle events on pod ns/name (the manager writes
// events.k8s.io events; the core API reads the same ones, as kubectl does).
func gpuIdleEvents(ctx context.Context, t *testing.T, ns, name string) []corev1.Event {
	t.Helper()
	l, err := cs.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.kind=Pod,involvedObject.name=" + name + ",reason=GPUIdle"})
	require.NoError(t, err)
	return l.Items
}

var idleForRE = regexp.MustCompile(`\) for ([0-9hms.]+) \(team policy`)

// idleFor is how long the event says the pod had been idle.
func idleFor(t *testing.T, note string) time.Duration {
	t.Helper()
	m := idleForRE.FindStringSubmatch(note)
	require.Len(t, m, 2, "no idle time in %q", note)
	d, err := time.ParseDuration(m[1])
	require.NoError(t, err)
	return d
}
