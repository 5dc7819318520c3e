package idle_test

import (
	"context"
	"net"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/retry"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpuvc/gpuvc/e2e/testsupport/poll"
	"github.com/gpuvc/gpuvc/e2e/testsupport/testobj"
	"github.com/gpuvc/gpuvc/gpu/nodeagent"
	"github.com/gpuvc/gpuvc/gpu/usage"
	"github.com/gpuvc/gpuvc/manager/agentmetrics"
	"github.com/gpuvc/gpuvc/manager/api/contract"
	gpuvcv1 "github.com/gpuvc/gpuvc/manager/api/v1alpha1"
	"github.com/gpuvc/gpuvc/manager/idle"
)

// fakeAgent serves what `gpuvc agent --metrics-bind-address` serves on a GPU
// node: the agent's own collector over the given samples and device owners.
func fakeAgent(t *testing.T, samples []usage.Sample, owners map[string]nodeagent.DeviceOwner) (ip string, port int) {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(&nodeagent.UtilizationCollector{
		Node:   "gpu-1",
		Read:   func() ([]usage.Sample, error) { return samples, nil },
		Owners: func(context.Context) (map[string]nodeagent.DeviceOwner, error) { return owners, nil },
		Log:    logr.Discard(),
	})
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	t.Cleanup(srv.Close)
	host, p, err := net.SplitHostPort(srv.Listener.Addr().String())
	require.NoError(t, err)
	port, err = strconv.Atoi(p)
	require.NoError(t, err)
	return host, port
}

// agentPodAt records an agent pod (the chart's labels) that "runs" at ip: it
// is never scheduled (no node matches), its status says Running at ip.
func agentPodAt(ctx context.Context, t *testing.T, ns, ip string) {
	t.Helper()
	require.NoError(t, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	t.Cleanup(func() { _ = c.Delete(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}) })
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "gpuvc-agent-x1", Namespace: ns, Labels: map[string]string{
			"app.kubernetes.io/name": "gpuvc", "app.kubernetes.io/instance": "gpuvc", "app.kubernetes.io/component": "agent"}},
		Spec: corev1.PodSpec{
			NodeSelector: map[string]string{"gpuvc.dev/pool": "no-such-pool"},
			Containers:   []corev1.Container{{Name: "agent", Image: "ghcr.io/gpuvc/gpuvc:test"}},
		},
	}
	require.NoError(t, c.Create(ctx, p))
	// The scheduler writes the pod's status too (unschedulable): re-read on a conflict.
	require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := c.Get(ctx, client.ObjectKeyFromObject(p), p); err != nil {
			return err
		}
		p.Status.Phase, p.Status.PodIP, p.Status.PodIPs = corev1.PodRunning, ip, []corev1.PodIP{{IP: ip}}
		return c.Status().Update(ctx, p)
	}))
}

// TestIdleGPUPodsFromAgentMetrics: the path `gpuvc manager --agent-metrics-port`
// wires — agentmetrics.Source finds the agent pod by its labels, scrapes its
// /metrics (the agent's real collector behind httptest) and the reaper evicts
// the pod the agent reports idle and the share pod whose reservation's GPU is
// idle; the busy pod and the share on a busy GPU stay.
func TestIdleGPUPodsFromAgentMetrics(t *testing.T) {
	ctx := integration(t)
	ns := gpuPodTeam(ctx, t, "gpuidle-agent", gpuvcv1.IdleActionEvict)
	pct := func(v float64) *float64 { return &v }
	ip, port := fakeAgent(t, []usage.Sample{
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
	agentPodAt(ctx, t, agentNS, ip)

	clk := clocktesting.NewFakeClock(time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC))
	src := &agentmetrics.Source{Reader: c, Namespace: agentNS, Port: port, MaxAge: 15 * time.Second, Clock: clk}
	rec := events.NewFakeRecorder(20)
	r := idle.NewGPUPodReaper(c, c, rec, src, clk)

	r.Tick(ctx)
	clk.Step(9 * time.Minute)
	r.Tick(ctx)
	require.Empty(t, drain(rec), "acted before spec.idle.gpuPods.after")
	clk.Step(time.Minute)
	r.Tick(ctx)
	got := drain(rec)
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
