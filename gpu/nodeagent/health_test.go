package nodeagent

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/events"

	"github.com/gpuvc/gpuvc/api/contract"
	"github.com/gpuvc/gpuvc/gpu/health"
)

func gpuPod(name, node, uuid string) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "team-a", Annotations: map[string]string{}}, Spec: corev1.PodSpec{NodeName: node}}
	if uuid != "" {
		p.Annotations[contract.AnnotationGPUUUID] = uuid
	}
	return p
}

// healthClient is a fake clientset with node n0 (a pool taint) and pods; an
// eviction deletes the pod, as the API server does when no budget forbids it.
func healthClient(pods ...*corev1.Pod) *fake.Clientset {
	objs := []runtime.Object{&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n0"}, Spec: corev1.NodeSpec{
		Taints: []corev1.Taint{{Key: contract.LabelPool, Value: "a100", Effect: corev1.TaintEffectNoSchedule}},
	}}}
	for _, p := range pods {
		objs = append(objs, p)
	}
	c := fake.NewClientset(objs...)
	c.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "eviction" {
			return false, nil, nil
		}
		ev := a.(k8stesting.CreateAction).GetObject().(*policyv1.Eviction)
		return true, nil, c.Tracker().Delete(corev1.SchemeGroupVersion.WithResource("pods"), ev.Namespace, ev.Name)
	})
	return c
}

func gpuCondition(t *testing.T, n *corev1.Node) corev1.NodeCondition {
	t.Helper()
	for _, c := range n.Status.Conditions {
		if c.Type == contract.ConditionGPUHealthy {
			return c
		}
	}
	t.Fatalf("node %s has no %s condition: %v", n.Name, contract.ConditionGPUHealthy, n.Status.Conditions)
	return corev1.NodeCondition{}
}

func drainEvents(r *events.FakeRecorder) []string {
	var out []string
	for {
		select {
		case e := <-r.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

func TestHealthPolicies(t *testing.T) {
	xid79 := health.Event{Index: 1, UUID: "GPU-b", Kind: health.KindXID, XID: 79}
	type want struct {
		taints        []string
		unschedulable bool
		pods          []string
		events        []string // reasons
	}
	for policy, w := range map[HealthPolicy]want{
		HealthReport: {taints: []string{"gpuvc.dev/pool"}, pods: []string{"other", "res-b", "share-b"},
			events: []string{ReasonGPUUnhealthy}},
		HealthTaint: {taints: []string{"gpuvc.dev/pool", contract.TaintGPUUnhealthy}, pods: []string{"other", "res-b", "share-b"},
			events: []string{ReasonGPUUnhealthy, ReasonNodeTainted}},
		HealthCordonDrain: {taints: []string{"gpuvc.dev/pool", contract.TaintGPUUnhealthy}, unschedulable: true, pods: []string{"other"},
			events: []string{ReasonGPUUnhealthy, ReasonNodeTainted, ReasonNodeCordoned, ReasonEvicted, ReasonEvicted}},
	} {
		t.Run(string(policy), func(t *testing.T) {
			ctx := context.Background()
			c := healthClient(gpuPod("res-b", "n0", "GPU-b"), gpuPod("share-b", "n0", "GPU-b"), gpuPod("other", "n0", "GPU-a"))
			rec := events.NewFakeRecorder(20)
			reg := prometheus.NewRegistry()
			m, err := NewHealthMetrics(reg, []string{"GPU-a", "GPU-b"})
			if err != nil {
				t.Fatal(err)
			}
			var plugin []string
			// Any GPU out taints (--gpu-failure-node-taint=any); the default,
			// every GPU out, is TestHealthTaintsOnlyWhenEveryGPUIsOut.
			h := &Health{Client: c, NodeName: "n0", Policy: policy, GPUs: 2, Recorder: rec, Metrics: m, NodeTaint: NodeTaintAnyOut,
				OnUnhealthy: func(uuid string) { plugin = append(plugin, uuid) }}

			// Start: all healthy, nothing changes but the condition.
			if err := h.Enforce(ctx); err != nil {
				t.Fatal(err)
			}
			n, _ := c.CoreV1().Nodes().Get(ctx, "n0", metav1.GetOptions{})
			if cond := gpuCondition(t, n); cond.Status != corev1.ConditionTrue || cond.Reason != "AllGPUsHealthy" {
				t.Errorf("healthy node: condition %+v", cond)
			}

			// XID 79 on GPU 1, reported twice (NVML repeats): one failure.
			for range 2 {
				if err := h.Report(ctx, xid79); err != nil {
					t.Fatal(err)
				}
			}
			n, _ = c.CoreV1().Nodes().Get(ctx, "n0", metav1.GetOptions{})
			cond := gpuCondition(t, n)
			if cond.Status != corev1.ConditionFalse || cond.Reason != "XID" ||
				cond.Message != "1 of 2 GPUs out of service: GPU 1 (GPU-b): XID 79 (GPU has fallen off the bus); failure 1, out until an operator clears it (no probation), returned 0 times" {
				t.Errorf("condition %+v", cond)
			}
			if got := n.Annotations[contract.AnnotationUnhealthyGPUs]; got != "GPU-b" {
				t.Errorf("annotation %s = %q, want GPU-b", contract.AnnotationUnhealthyGPUs, got)
			}
			var taints []string
			for _, tt := range n.Spec.Taints {
				taints = append(taints, tt.Key)
			}
			if diff := cmp.Diff(w.taints, taints); diff != "" || n.Spec.Unschedulable != w.unschedulable {
				t.Errorf("taints (-want +got):\n%s\nunschedulable %v, want %v", diff, n.Spec.Unschedulable, w.unschedulable)
			}
			pods, _ := c.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
			var left []string
			for _, p := range pods.Items {
				left = append(left, p.Name)
			}
			if diff := cmp.Diff(w.pods, left); diff != "" {
				t.Errorf("pods left (-want +got):\n%s", diff)
			}
			var reasons []string
			for _, e := range drainEvents(rec) {
				reasons = append(reasons, strings.Fields(e)[1])
				if !strings.Contains(e, "GPU-b") {
					t.Errorf("event %q does not name the GPU", e)
				}
			}
			if diff := cmp.Diff(w.events, reasons); diff != "" {
				t.Errorf("event reasons (-want +got):\n%s", diff)
			}
			if !cmp.Equal(plugin, []string{"GPU-b"}) {
				t.Errorf("device plugin told %v, want GPU-b once", plugin)
			}
			if v := testutil.ToFloat64(m.Healthy.WithLabelValues("n0", "1", "GPU-b")); v != 0 {
				t.Errorf("gpuvc_agent_gpu_healthy of GPU 1 = %v, want 0", v)
			}
			if v := testutil.ToFloat64(m.Healthy.WithLabelValues("n0", "0", "GPU-a")); v != 1 {
				t.Errorf("gpuvc_agent_gpu_healthy of GPU 0 = %v, want 1", v)
			}
			if v := testutil.ToFloat64(m.Failures.WithLabelValues("n0", "1", "GPU-b", "XID", "79")); v != 2 {
				t.Errorf("gpuvc_agent_gpu_failures_total = %v, want 2 (each report counts)", v)
			}

			// Enforcing again writes nothing new and records no event.
			before := len(c.Actions())
			if err := h.Enforce(ctx); err != nil {
				t.Fatal(err)
			}
			for _, a := range c.Actions()[before:] {
				if a.GetVerb() != "get" && a.GetVerb() != "list" {
					t.Errorf("second enforcement wrote: %s %s/%s", a.GetVerb(), a.GetResource().Resource, a.GetSubresource())
				}
			}
			if e := drainEvents(rec); len(e) != 0 {
				t.Errorf("second enforcement recorded %v", e)
			}
		})
	}
}

// A restarted agent continues the quarantine the node records: the GPU stays
// out (the device plugin is told again) until an operator clears it; then the
// taint goes and the cordon the agent set is lifted; the pool taint stays.
func TestHealthRestartContinuesTheQuarantine(t *testing.T) {
	ctx := context.Background()
	c := healthClient()
	old := &Health{Client: c, NodeName: "n0", Policy: HealthCordonDrain, GPUs: 1}
	if err := old.Report(ctx, health.Event{Index: 0, UUID: "GPU-a", Kind: health.KindDoubleBitECC}); err != nil {
		t.Fatal(err)
	}
	var plugin []string
	restarted := &Health{Client: c, NodeName: "n0", Policy: HealthCordonDrain, GPUs: 1,
		OnUnhealthy: func(uuid string) { plugin = append(plugin, "out "+uuid) }, OnHealthy: func(uuid string) { plugin = append(plugin, "back "+uuid) }}
	if err := restarted.Enforce(ctx); err != nil {
		t.Fatal(err)
	}
	n, _ := c.CoreV1().Nodes().Get(ctx, "n0", metav1.GetOptions{})
	if len(n.Spec.Taints) != 2 || !n.Spec.Unschedulable || n.Annotations[contract.AnnotationUnhealthyGPUs] != "GPU-a" {
		t.Errorf("after a restart: taints %v unschedulable %v annotations %v: want the GPU still out", n.Spec.Taints, n.Spec.Unschedulable, n.Annotations)
	}
	if r, ok := restarted.Record("GPU-a"); !ok || r.Failures != 1 || r.State != StateProbation {
		t.Errorf("restored record %+v %v", r, ok)
	}

	annotate(t, c, "n0", contract.AnnotationGPUQuarantineClear, "all")
	if err := restarted.Enforce(ctx); err != nil {
		t.Fatal(err)
	}
	n, _ = c.CoreV1().Nodes().Get(ctx, "n0", metav1.GetOptions{})
	if len(n.Spec.Taints) != 1 || n.Spec.Taints[0].Key != contract.LabelPool || n.Spec.Unschedulable {
		t.Errorf("after the clear: taints %v unschedulable %v: want only the pool taint, uncordoned", n.Spec.Taints, n.Spec.Unschedulable)
	}
	for _, k := range []string{contract.AnnotationUnhealthyGPUs, contract.AnnotationGPUQuarantineClear, contract.AnnotationGPUHealthCordoned} {
		if _, ok := n.Annotations[k]; ok {
			t.Errorf("annotation %s left: %v", k, n.Annotations)
		}
	}
	if cond := gpuCondition(t, n); cond.Status != corev1.ConditionTrue {
		t.Errorf("condition %+v, want True", cond)
	}
	if !cmp.Equal(plugin, []string{"out GPU-a", "back GPU-a"}) {
		t.Errorf("device plugin told %v", plugin)
	}
}

// annotate sets a node annotation as an operator would (kubectl annotate).
func annotate(t *testing.T, c *fake.Clientset, node, key, value string) {
	t.Helper()
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, key, value)
	if _, err := c.CoreV1().Nodes().Patch(context.Background(), node, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}

func TestParseHealthPolicy(t *testing.T) {
	for _, s := range []string{"report", "taint", "cordon-drain"} {
		if p, err := ParseHealthPolicy(s); err != nil || string(p) != s {
			t.Errorf("%s: %v %v", s, p, err)
		}
	}
	if _, err := ParseHealthPolicy("drain"); err == nil || !strings.Contains(err.Error(), "report, taint, cordon-drain") {
		t.Errorf("err = %v", err)
	}
}

// Another writer changed the node between the agent's read and its taint
// patch: the agent reads again and taints at once (no wait for the resync).
func TestHealthTaintRetriesAConflict(t *testing.T) {
	ctx := context.Background()
	c := healthClient()
	conflicts := 0
	c.PrependReactor("patch", "nodes", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() == "" && a.(k8stesting.PatchAction).GetPatchType() == types.MergePatchType && conflicts == 0 {
			conflicts++
			return true, nil, apierrors.NewConflict(corev1.Resource("nodes"), "n0", errors.New("the object has been modified"))
		}
		return false, nil, nil
	})
	h := &Health{Client: c, NodeName: "n0", Policy: HealthTaint, GPUs: 1}
	if err := h.Report(ctx, health.Event{UUID: "GPU-a", Kind: health.KindLost}); err != nil {
		t.Fatal(err)
	}
	n, _ := c.CoreV1().Nodes().Get(ctx, "n0", metav1.GetOptions{})
	if conflicts != 1 || len(n.Spec.Taints) != 2 {
		t.Errorf("conflicts %d, taints %v: want the taint after one conflict", conflicts, n.Spec.Taints)
	}
}
