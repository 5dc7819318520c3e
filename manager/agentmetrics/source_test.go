package agentmetrics

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/gpuvc/gpuvc/gpu/nodeagent"
	"github.com/gpuvc/gpuvc/gpu/usage"
)

func pct(v float64) *float64 { return &v }

// agentServer serves what `gpuvc agent --metrics-bind-address` serves: the
// agent's own UtilizationCollector over samples and pod-resources owners.
func agentServer(t *testing.T, samples []usage.Sample, owners map[string]nodeagent.DeviceOwner) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(&nodeagent.UtilizationCollector{
		Node:   "gpu-1",
		Read:   func() ([]usage.Sample, error) { return samples, nil },
		Owners: func(context.Context) (map[string]nodeagent.DeviceOwner, error) { return owners, nil },
		Log:    logr.Discard(),
	})
	var hits atomic.Int32
	h := promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/metrics" {
			http.NotFound(w, r)
			return
		}
		hits.Add(1)
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv, &hits
}

func agentPod(name, ip string, phase corev1.PodPhase) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "gpuvc-system",
			Labels: map[string]string{"app.kubernetes.io/name": "gpuvc", "app.kubernetes.io/component": "agent", "app.kubernetes.io/instance": "gpuvc"}},
		Spec:   corev1.PodSpec{NodeName: "gpu-1"},
		Status: corev1.PodStatus{Phase: phase, PodIP: ip},
	}
}

func TestSourceReadsAgentMetrics(t *testing.T) {
	srv, hits := agentServer(t, []usage.Sample{
		{UUID: "GPU-a", GPU: 0, UtilizationPercent: pct(3), MemoryTotalBytes: 80 << 30},
		{UUID: "GPU-b", GPU: 1, UtilizationPercent: pct(71), MemoryTotalBytes: 80 << 30},
		{UUID: "GPU-c", GPU: 2, UtilizationPercent: pct(0), MemoryTotalBytes: 80 << 30},
		{UUID: "GPU-d", GPU: 3, UtilizationPercent: pct(0), MemoryTotalBytes: 80 << 30},
		{UUID: "MIG-e", GPU: 4, MIG: true, MemoryTotalBytes: 10 << 30}, // NVML: no utilization for MIG
	}, map[string]nodeagent.DeviceOwner{
		"GPU-a": {Namespace: "team-fraud", Pod: "train", Container: "main", Resource: "nvidia.com/gpu"},
		"GPU-b": {Namespace: "team-fraud", Pod: "train", Container: "main", Resource: "nvidia.com/gpu"},
		"GPU-c": {Namespace: "team-fraud", Pod: "idle-notebook", Container: "nb", Resource: "nvidia.com/gpu"},
		"MIG-e": {Namespace: "team-fraud", Pod: "mig-pod", Container: "main", Resource: "nvidia.com/mig-1g.10gb"},
		// GPU-d: held by nobody
	})
	host, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	portNum, _ := strconv.Atoi(port)
	c := fake.NewClientBuilder().WithObjects(
		agentPod("gpuvc-agent-x1", host, corev1.PodRunning),
		agentPod("gpuvc-agent-pending", "", corev1.PodPending),
		agentPod("gpuvc-agent-gone", "127.0.0.2", corev1.PodFailed),
	).Build()
	clk := clocktesting.NewFakePassiveClock(time.Now())
	s := &Source{Reader: c, Namespace: "gpuvc-system", Port: portNum, MaxAge: time.Minute, Clock: clk}

	type answer struct {
		Percent float64
		Known   bool
	}
	ask := func(ns, pod string) answer {
		t.Helper()
		p, known, err := s.PodGPUUtilization(context.Background(), ns, pod)
		if err != nil {
			t.Fatalf("PodGPUUtilization(%s/%s): %v", ns, pod, err)
		}
		return answer{p, known}
	}
	got := map[string]answer{
		"busiest of two GPUs": ask("team-fraud", "train"),
		"idle pod":            ask("team-fraud", "idle-notebook"),
		"MIG pod: unknown":    ask("team-fraud", "mig-pod"),
		"no device: unknown":  ask("team-fraud", "cpu-only"),
		"other namespace":     ask("team-other", "train"),
	}
	want := map[string]answer{
		"busiest of two GPUs": {71, true},
		"idle pod":            {0, true},
		"MIG pod: unknown":    {0, false},
		"no device: unknown":  {0, false},
		"other namespace":     {0, false},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("utilization (-want +got):\n%s", diff)
	}
	if n := hits.Load(); n != 1 {
		t.Errorf("%d scrapes for five questions within MaxAge, want 1", n)
	}
	clk.SetTime(clk.Now().Add(time.Minute))
	ask("team-fraud", "train")
	if n := hits.Load(); n != 2 {
		t.Errorf("%d scrapes after MaxAge passed, want 2", n)
	}
}

func TestSourceWithAgentDown(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	host, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	srv.Close() // nothing listens any more
	portNum, _ := strconv.Atoi(port)
	c := fake.NewClientBuilder().WithObjects(agentPod("gpuvc-agent-x1", host, corev1.PodRunning)).Build()
	s := &Source{Reader: c, Namespace: "gpuvc-system", Port: portNum}
	_, known, err := s.PodGPUUtilization(context.Background(), "team-fraud", "train")
	if err != nil || known {
		t.Fatalf("agent down: known %v, err %v; want unknown (never idle) without an error", known, err)
	}
}

func TestPodUtilizationRejectsGarbage(t *testing.T) {
	if _, err := PodUtilization(strings.NewReader("gpuvc_team_gpu_utilization{pod=\"x\" 3\n")); err == nil {
		t.Fatal("a malformed exposition parsed without an error")
	}
}

// An agent that is not a pod (a node's own agent daemon) is scraped at its
// address, with no pod listing at all.
func TestSourceScrapesAgentAddresses(t *testing.T) {
	srv, hits := agentServer(t, []usage.Sample{
		{UUID: "GPU-a", GPU: 0, UtilizationPercent: pct(0), MemoryTotalBytes: 80 << 30},
		{UUID: "GPU-b", GPU: 1, UtilizationPercent: pct(64), MemoryTotalBytes: 80 << 30},
	}, map[string]nodeagent.DeviceOwner{
		"GPU-a": {Namespace: "team-fraud", Pod: "idle", Container: "main", Resource: "nvidia.com/gpu"},
		"GPU-b": {Namespace: "team-fraud", Pod: "busy", Container: "main", Resource: "nvidia.com/gpu"},
	})
	s := &Source{Addresses: []string{srv.Listener.Addr().String()}}
	for pod, want := range map[string]float64{"idle": 0, "busy": 64} {
		got, known, err := s.PodGPUUtilization(context.Background(), "team-fraud", pod)
		if err != nil || !known || got != want {
			t.Errorf("%s: %v %v %v, want %v known", pod, got, known, err, want)
		}
	}
	if _, known, _ := s.PodGPUUtilization(context.Background(), "team-fraud", "other"); known {
		t.Error("a pod no agent reports is known")
	}
	if n := hits.Load(); n != 1 {
		t.Errorf("%d scrapes for three looks within MaxAge, want 1", n)
	}
}
