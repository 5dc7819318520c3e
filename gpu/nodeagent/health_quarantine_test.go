package nodeagent

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/gpuvc/gpuvc/api/contract"
	"github.com/gpuvc/gpuvc/gpu/health"
)

// A GPU is withdrawn alone and comes back, on a fake clock, with the
// cordon-drain policy and the default taint mode (every GPU out): a whole-GPU
// pod and a MIG pod, found only through the kubelet's device owners, are
// evicted with their GPU and their GPU time counted lost for their team; the
// node is neither tainted nor cordoned while a GPU is in service; after the
// probation the GPU returns (device plugin, condition, metric, event); the
// second failure of a GPU is permanent, and with every GPU out the node is
// tainted and cordoned, lifted again when the other GPU returns.
func TestHealthQuarantinePerGPU(t *testing.T) {
	ctx := context.Background()
	clk := clocktesting.NewFakeClock(time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC))
	started := metav1.NewTime(clk.Now().Add(-time.Hour))
	whole := gpuPod("whole-a", "n0", "")
	whole.Status.StartTime = &started
	migPod := gpuPod("mig-b", "n0", "")
	migPod.Status.StartTime = &started
	c := healthClient(whole, migPod, gpuPod("cpu-only", "n0", ""))
	owners := map[string]DeviceOwner{
		"GPU-a":   {Namespace: "team-a", Pod: "whole-a", Container: "c", Resource: contract.ResourceGPU},
		"MIG-b-1": {Namespace: "team-a", Pod: "mig-b", Container: "c", Resource: "nvidia.com/mig-3g.40gb"},
	}
	rec := events.NewFakeRecorder(50)
	reg := prometheus.NewRegistry()
	m, err := NewHealthMetrics(reg, []string{"GPU-a", "GPU-b"})
	if err != nil {
		t.Fatal(err)
	}
	var plugin []string
	h := &Health{Client: c, NodeName: "n0", Policy: HealthCordonDrain, GPUs: 2, Clock: clk, Recorder: rec, Metrics: m,
		Quarantine:  QuarantinePolicy{Probation: 10 * time.Minute, MaxFailures: 2},
		Devices:     map[string]Device{"GPU-a": {GPU: "GPU-a", Weight: 1}, "MIG-b-1": {GPU: "GPU-b", Weight: 3.0 / 7}},
		Owners:      func(context.Context) (map[string]DeviceOwner, error) { return owners, nil },
		OnUnhealthy: func(uuid string) { plugin = append(plugin, "out "+uuid) },
		OnHealthy:   func(uuid string) { plugin = append(plugin, "back "+uuid) }}
	node := func() *corev1.Node {
		n, err := c.CoreV1().Nodes().Get(ctx, "n0", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	tainted := func(n *corev1.Node) bool {
		return slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == contract.TaintGPUUnhealthy })
	}
	pods := func() []string {
		l, _ := c.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
		var out []string
		for _, p := range l.Items {
			out = append(out, p.Name)
		}
		return out
	}
	reasons := func() []string {
		var out []string
		for _, e := range drainEvents(rec) {
			out = append(out, strings.Fields(e)[1])
		}
		return out
	}
	xidA := health.Event{Index: 0, UUID: "GPU-a", Kind: health.KindXID, XID: 79}
	eccB := health.Event{Index: 1, UUID: "GPU-b", Kind: health.KindDoubleBitECC}

	// GPU 0 fails: its whole-GPU pod goes, the MIG pod on GPU 1 stays, the node
	// stays schedulable.
	if err := h.Report(ctx, xidA); err != nil {
		t.Fatal(err)
	}
	n := node()
	if tainted(n) || n.Spec.Unschedulable {
		t.Errorf("one of two GPUs out: taints %v unschedulable %v", n.Spec.Taints, n.Spec.Unschedulable)
	}
	if diff := cmp.Diff([]string{"cpu-only", "mig-b"}, pods()); diff != "" {
		t.Errorf("pods left (-want +got):\n%s", diff)
	}
	if got := n.Annotations[contract.AnnotationUnhealthyGPUs]; got != "GPU-a" {
		t.Errorf("unhealthy GPUs %q", got)
	}
	if cond := gpuCondition(t, n); cond.Status != corev1.ConditionFalse ||
		!strings.Contains(cond.Message, "failure 1 of 2, probation until 2026-11-28T12:10:00Z, returned 0 times") {
		t.Errorf("condition %+v", cond)
	}
	if diff := cmp.Diff([]string{ReasonGPUUnhealthy, ReasonEvicted}, sorted(reasons())); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	var lost map[string]float64
	if err := json.Unmarshal([]byte(n.Annotations[contract.AnnotationGPUSecondsLost]), &lost); err != nil || lost["a"] != 3600 {
		t.Errorf("GPU-seconds lost %v (%v), want a: 3600 (one GPU for the hour the pod ran)", lost, err)
	}
	if v := testutil.ToFloat64(m.Lost.WithLabelValues("n0", "a")); v != 3600 {
		t.Errorf("gpuvc_agent_gpu_seconds_lost_total = %v", v)
	}
	if v := testutil.ToFloat64(m.Quarantined.WithLabelValues("n0", "0", "GPU-a")); v != 1 {
		t.Errorf("gpuvc_agent_gpu_quarantined of GPU 0 = %v, want 1 (probation)", v)
	}

	// Quiet probation: GPU 0 returns by itself.
	clk.Step(10 * time.Minute)
	if err := h.Enforce(ctx); err != nil {
		t.Fatal(err)
	}
	n = node()
	if cond := gpuCondition(t, n); cond.Status != corev1.ConditionTrue || !strings.Contains(cond.Message, "GPU 0 (GPU-a) failed 1 times, returned 1 times") {
		t.Errorf("after the probation: condition %+v", cond)
	}
	if _, ok := n.Annotations[contract.AnnotationUnhealthyGPUs]; ok {
		t.Errorf("annotation %s left", contract.AnnotationUnhealthyGPUs)
	}
	if v := testutil.ToFloat64(m.Returns.WithLabelValues("n0", "0", "GPU-a")); v != 1 {
		t.Errorf("gpuvc_agent_gpu_returns_total = %v", v)
	}
	if diff := cmp.Diff([]string{ReasonGPUReturned}, reasons()); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}

	// GPU 1 fails (its MIG pod goes, 3/7 of a GPU for 70 minutes lost), then
	// GPU 0 again: its second failure is permanent and every GPU is out.
	if err := h.Report(ctx, eccB); err != nil {
		t.Fatal(err)
	}
	if tainted(node()) {
		t.Error("tainted with GPU 0 in service")
	}
	if err := h.Report(ctx, xidA); err != nil {
		t.Fatal(err)
	}
	n = node()
	if !tainted(n) || !n.Spec.Unschedulable || n.Annotations[contract.AnnotationGPUHealthCordoned] != "true" {
		t.Errorf("every GPU out: taints %v unschedulable %v annotations %v", n.Spec.Taints, n.Spec.Unschedulable, n.Annotations)
	}
	if r, _ := h.Record("GPU-a"); r.State != StatePermanent || r.Failures != 2 {
		t.Errorf("GPU 0 after its second failure: %+v", r)
	}
	migWeight := 3.0 / 7 // a variable: float64 arithmetic, as the agent's
	lost = nil
	err = json.Unmarshal([]byte(n.Annotations[contract.AnnotationGPUSecondsLost]), &lost)
	if want := 3600 + migWeight*(70*60); err != nil || lost["a"] != want {
		t.Errorf("GPU-seconds lost %v (%v), want a: %v", lost, err, want)
	}
	if diff := cmp.Diff([]string{ReasonGPUQuarantined, ReasonGPUUnhealthy, ReasonNodeCordoned, ReasonEvicted, ReasonNodeTainted}, sorted(reasons())); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}

	// GPU 1's probation ends: the node is usable again, GPU 0 stays out.
	clk.Step(10 * time.Minute)
	if err := h.Enforce(ctx); err != nil {
		t.Fatal(err)
	}
	n = node()
	if tainted(n) || n.Spec.Unschedulable {
		t.Errorf("GPU 1 back: taints %v unschedulable %v", n.Spec.Taints, n.Spec.Unschedulable)
	}
	if got := n.Annotations[contract.AnnotationUnhealthyGPUs]; got != "GPU-a" {
		t.Errorf("unhealthy GPUs %q, want GPU-a (permanent)", got)
	}
	if v := testutil.ToFloat64(m.Quarantined.WithLabelValues("n0", "0", "GPU-a")); v != 2 {
		t.Errorf("gpuvc_agent_gpu_quarantined of GPU 0 = %v, want 2 (permanent)", v)
	}
	if diff := cmp.Diff([]string{ReasonGPUReturned, ReasonNodeUncordoned, ReasonNodeUntainted}, sorted(reasons())); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	if want := []string{"out GPU-a", "back GPU-a", "out GPU-b", "out GPU-a", "back GPU-b"}; !cmp.Equal(plugin, want) {
		t.Errorf("device plugin told %v, want %v", plugin, want)
	}
}

// A clear naming a GPU that is not out is refused with an event naming the
// value and what is out; the annotation is removed.
func TestHealthClearOfAGPUInService(t *testing.T) {
	ctx := context.Background()
	c := healthClient()
	rec := events.NewFakeRecorder(10)
	h := &Health{Client: c, NodeName: "n0", Policy: HealthReport, GPUs: 2, Recorder: rec}
	annotate(t, c, "n0", contract.AnnotationGPUQuarantineClear, "GPU-typo")
	if err := h.Enforce(ctx); err != nil {
		t.Fatal(err)
	}
	evs := drainEvents(rec)
	if len(evs) != 1 || !strings.Contains(evs[0], ReasonClearInvalid) || !strings.Contains(evs[0], "GPU-typo") {
		t.Errorf("events %v", evs)
	}
	n, _ := c.CoreV1().Nodes().Get(ctx, "n0", metav1.GetOptions{})
	if _, ok := n.Annotations[contract.AnnotationGPUQuarantineClear]; ok {
		t.Error("clear annotation left")
	}
}

func sorted(s []string) []string {
	slices.Sort(s)
	return s
}
