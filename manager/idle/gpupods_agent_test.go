package idle_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpuvc/gpuvc/api/contract"
	gpuvcv1 "github.com/gpuvc/gpuvc/api/v1alpha1"
	"github.com/gpuvc/gpuvc/e2e/testsupport/fakeagent"
	"github.com/gpuvc/gpuvc/e2e/testsupport/poll"
	"github.com/gpuvc/gpuvc/e2e/testsupport/testobj"
	"github.com/gpuvc/gpuvc/gpu/nodeagent"
	"github.com/gpuvc/gpuvc/gpu/usage"
	"github.com/gpuvc/gpuvc/manager/agentmetrics"
	"github.com/gpuvc/gpuvc/manager/idle"
)

// TestIdleGPUPodsFromAgentMetrics: the path `gpuvc manager --agent-metrics-port`
// wires — agentmetrics.Source finds the agent pod by its labels, scrapes its
// /metrics (the agent's real collector behind httptest) and the reaper evicts
// the pod the agent reports idle and the share pod whose reservation's GPU is
// idle; the busy pod and the share on a busy GPU stay.
func TestIdleGPUPodsFromAgentMetrics(t *testing.T) {
	ctx := integration(t)
	ns := gpuPodTeam(ctx, t, "gpuidle-agent", gpuvcv1.IdleActionEvict)
	pct := fakeagent.Percent
	agent := fakeagent.Serve(t, "gpu-1", []usage.Sample{
		{UUID: "GPU-idle", GPU: 0, UtilizationPercent: pct(2), MemoryTotalBytes: 80 << 30},
		{UUID: "GPU-busy", GPU: 1, UtilizationPercent: pct(90), MemoryTotalBytes: 80 << 30},
		{UUID: "GPU-res-1", GPU: 2, UtilizationPercent: pct(1), MemoryTotalBytes: 80 << 30},
		{UUID: "GPU-res-2", GPU: 3, UtilizationPercent: pct(60), MemoryTotalBytes: 80 << 30},
	}, map[string]nodeagent.DeviceOwner{
		"GPU-res-1": {Namespace: ns, Pod: "res-1", Container: "reserve", Resource: "nvidia.com/gpu"},
		"GPU-res-2": {Namespace: ns, Pod: "res-2", Container: "reserve", Resource: "nvidia.com/gpu"},
		"GPU-idle":  {Namespace: ns, Pod: "idle", Container: "main", Resource: "nvidia.com/gpu"},
		"GPU-busy":  {Namespace: ns, Pod: "busy", Container: "main", Resource: "nvidia.com/gpu"},
	})
	// A share pod bound to reservation res-1 (whose whole GPU is idle) is idle too;
	// one bound to the busy GPU's reservation is not.
	for name, group := range map[string]string{"share-idle": "res-1", "share-busy": "res-2"} {
		require.NoError(t, c.Create(ctx, testobj.Pod(name, ns).InPool("a100").
			Label(contract.LabelShareGroup, group).Annotation(contract.AnnotationShareUnits, "5000").Obj()))
		poll.UntilSeen(ctx, t, time.Minute, "pod "+name+" running on kwok", func(ctx context.Context) (bool, string, error) {
			p := &corev1.Pod{}
			if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, p); err != nil {
				return false, "", err
			}
			return p.Status.Phase == corev1.PodRunning, string(p.Status.Phase), nil
		})
	}
	agentNS := "gpuvc-agents-idle-test"
	agent.RecordPod(ctx, t, c, agentNS)

	clk := clocktesting.NewFakeClock(time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC))
	src := &agentmetrics.Source{Reader: c, Namespace: agentNS, Port: agent.Port, MaxAge: 15 * time.Second, Clock: clk}
	rec := events.NewFakeRecorder(20)
	r := idle.NewGPUPodReaper(c, c, rec, src, clk)

	got := reapAfterTenMinutes(ctx, t, r, clk, rec)
	require.Len(t, got, 2, "two events, for the idle pod and the share on the idle GPU: %v", got)
	require.True(t, strings.Contains(strings.Join(got, "\n"), "(now 2%)") && strings.Contains(strings.Join(got, "\n"), "(now 1%)"), "events %q", got)

	p := &corev1.Pod{}
	for _, name := range []string{"idle", "share-idle"} {
		err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, p)
		gone := err != nil && apierrors.IsNotFound(err) || err == nil && p.DeletionTimestamp != nil
		require.True(t, gone, "pod %s, reported idle, was not evicted: %v", name, err)
	}
	for _, name := range []string{"busy", "share-busy"} {
		require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, p))
		require.Nil(t, p.DeletionTimestamp, "pod %s on a busy GPU was touched", name)
	}
}
