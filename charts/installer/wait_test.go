package installer

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/gpuvc/gpuvc/charts"
)

// TestRenderNeedsNoCluster renders the embedded chart client-only and finds the
// workloads --wait watches in it.
func TestRenderNeedsNoCluster(t *testing.T) {
	res, err := Render(context.Background(), "gpu-ops", map[string]any{"certManager": map[string]any{"enabled": false}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Action != Rendered || res.Release != ReleaseName || res.Namespace != "gpu-ops" || res.Revision != 1 {
		t.Errorf("result %+v", res)
	}
	for _, s := range []string{"kind: CustomResourceDefinition", "name: teams.gpuvc.dev", "kind: Deployment", "namespace: gpu-ops"} {
		if !strings.Contains(res.Manifest, s) {
			t.Errorf("manifest has no %q", s)
		}
	}
	ws, err := Workloads(res.Manifest, "gpu-ops")
	if err != nil {
		t.Fatal(err)
	}
	want := []Workload{
		{"Deployment", "gpu-ops", "gpuvc-manager"},
		{"Service", "gpu-ops", charts.WebhookServiceName},
		{"DaemonSet", "gpu-ops", "gpuvc-agent"},
	}
	if diff := cmp.Diff(want, ws); diff != "" {
		t.Errorf("workloads (-want +got):\n%s", diff)
	}

	res, err = Render(context.Background(), "gpu-ops", map[string]any{"agent": map[string]any{"enabled": false}})
	if err != nil {
		t.Fatal(err)
	}
	ws, _ = Workloads(res.Manifest, "gpu-ops")
	for _, w := range ws {
		if w.Kind == "DaemonSet" {
			t.Errorf("agent.enabled=false still renders %s", w)
		}
	}

	if _, err := Render(context.Background(), "gpu-ops", map[string]any{"manager": map[string]any{"replica": 1}}); err == nil ||
		!strings.Contains(err.Error(), "manager: additional properties 'replica' not allowed") {
		t.Errorf("bad values: got %v", err)
	}
}

func deployment(replicas, updated, available int32, generation, observed int64) *appsv1.Deployment {
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "gpuvc-manager", Namespace: "ns", Generation: generation},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "manager"}},
		},
		Status: appsv1.DeploymentStatus{ObservedGeneration: observed, Replicas: updated, UpdatedReplicas: updated, AvailableReplicas: available},
	}
}

func TestDeploymentStatus(t *testing.T) {
	old := deployment(2, 2, 2, 1, 1)
	old.Status.Replicas = 3
	stalled := deployment(2, 2, 1, 1, 1)
	stalled.Status.Conditions = []appsv1.DeploymentCondition{{Type: "Progressing", Status: "False", Reason: "ProgressDeadlineExceeded"}}
	cases := map[string]struct {
		d     *appsv1.Deployment
		ready bool
		say   string
	}{
		"not observed":     {deployment(2, 2, 2, 2, 1), false, "to see the new spec"},
		"not updated":      {deployment(2, 1, 1, 1, 1), false, "1/2 replicas updated"},
		"old terminating":  {old, false, "1 old replicas terminating"},
		"not available":    {deployment(2, 2, 1, 1, 1), false, "1/2 replicas available"},
		"stalled":          {stalled, false, "progress deadline exceeded"},
		"ready":            {deployment(2, 2, 2, 1, 1), true, "2/2 replicas available"},
		"default replicas": {&appsv1.Deployment{Status: appsv1.DeploymentStatus{Replicas: 1, UpdatedReplicas: 1, AvailableReplicas: 1}}, true, "1/1"},
	}
	for name, tc := range cases {
		ready, say := deploymentStatus(tc.d)
		if ready != tc.ready || !strings.Contains(say, tc.say) {
			t.Errorf("%s: got %t %q, want %t %q", name, ready, say, tc.ready, tc.say)
		}
	}
}

func TestDaemonSetStatus(t *testing.T) {
	ds := func(desired, updated, available int32) *appsv1.DaemonSet {
		return &appsv1.DaemonSet{
			ObjectMeta: metav1.ObjectMeta{Generation: 1},
			Status: appsv1.DaemonSetStatus{ObservedGeneration: 1, DesiredNumberScheduled: desired,
				UpdatedNumberScheduled: updated, NumberAvailable: available},
		}
	}
	fresh := ds(0, 0, 0)
	fresh.Status.ObservedGeneration = 0
	cases := map[string]struct {
		ds    *appsv1.DaemonSet
		ready bool
		say   string
	}{
		"not observed":  {fresh, false, "to see the new spec"},
		"no nodes":      {ds(0, 0, 0), true, "no node matches"},
		"rolling":       {ds(3, 1, 3), false, "1/3 pods updated"},
		"not available": {ds(3, 3, 2), false, "2/3 pods available"},
		"ready":         {ds(3, 3, 3), true, "3/3 pods available"},
	}
	for name, tc := range cases {
		ready, say := daemonSetStatus(tc.ds)
		if ready != tc.ready || !strings.Contains(say, tc.say) {
			t.Errorf("%s: got %t %q, want %t %q", name, ready, say, tc.ready, tc.say)
		}
	}
}

func TestEndpointsStatus(t *testing.T) {
	ep := func(pod string, ready *bool) discoveryv1.Endpoint {
		return discoveryv1.Endpoint{Addresses: []string{"10.0.0." + pod}, Conditions: discoveryv1.EndpointConditions{Ready: ready},
			TargetRef: &corev1.ObjectReference{Namespace: "ns", Name: pod}}
	}
	if ready, say := endpointsStatus(nil); ready || !strings.Contains(say, "no ready endpoints") {
		t.Errorf("no slices: %t %q", ready, say)
	}
	notReady := []discoveryv1.EndpointSlice{{Endpoints: []discoveryv1.Endpoint{ep("a", ptr.To(false))}}}
	if ready, _ := endpointsStatus(notReady); ready {
		t.Error("an endpoint that is not ready counts")
	}
	// Dual stack: the same pod in an IPv4 and an IPv6 slice; nil Ready means ready.
	dual := []discoveryv1.EndpointSlice{
		{Endpoints: []discoveryv1.Endpoint{ep("a", nil), ep("b", ptr.To(true))}},
		{Endpoints: []discoveryv1.Endpoint{ep("a", nil)}},
	}
	if ready, say := endpointsStatus(dual); !ready || say != "2 ready endpoints" {
		t.Errorf("dual stack: %t %q", ready, say)
	}
}

// TestWaitReadyReportsChangesUntilReady: the Deployment becomes available on the
// third read; progress reports the first state and each change, no repeats.
func TestWaitReadyReportsChangesUntilReady(t *testing.T) {
	cs := fake.NewClientset(deployment(2, 0, 0, 1, 1), &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: "wh-1", Namespace: "ns", Labels: map[string]string{discoveryv1.LabelServiceName: "gpuvc-webhook"}},
		Endpoints:  []discoveryv1.Endpoint{{Addresses: []string{"10.0.0.1"}}},
	})
	var reads atomic.Int32
	cs.PrependReactor("get", "deployments", func(k8stesting.Action) (bool, runtime.Object, error) {
		switch reads.Add(1) {
		case 1, 2:
			return true, deployment(2, 2, 1, 1, 1), nil
		}
		return true, deployment(2, 2, 2, 1, 1), nil
	})
	ws := []Workload{{"Deployment", "ns", "gpuvc-manager"}, {"Service", "ns", "gpuvc-webhook"}}
	var lines []string
	got, err := WaitReady(context.Background(), cs, ws, time.Millisecond, func(_ time.Duration, s WorkloadStatus) {
		lines = append(lines, fmt.Sprintf("%t %s: %s", s.Ready, s.Workload, s.Status))
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"false Deployment gpuvc-manager: 1/2 replicas available",
		"true Service gpuvc-webhook: 1 ready endpoint",
		"true Deployment gpuvc-manager: 2/2 replicas available",
	}
	if diff := cmp.Diff(want, lines); diff != "" {
		t.Errorf("progress (-want +got):\n%s", diff)
	}
	for _, s := range got {
		if !s.Ready {
			t.Errorf("returned %+v", s)
		}
	}
}

// TestWaitReadyTimeoutSaysWhatAndWhy: at the deadline the error names what is not
// ready and why, from its pod.
func TestWaitReadyTimeoutSaysWhatAndWhy(t *testing.T) {
	cs := fake.NewClientset(deployment(2, 2, 0, 1, 1), &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "gpuvc-manager-x", Namespace: "ns", Labels: map[string]string{"app": "manager"}},
		Status: corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
			Message: "0/4 nodes are available: 4 node(s) didn't match Pod's node affinity/selector"}}},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err := WaitReady(ctx, cs, []Workload{{"Deployment", "ns", "gpuvc-manager"}, {"Service", "ns", "gpuvc-webhook"}}, 10*time.Millisecond, nil)
	if err == nil {
		t.Fatal("no error at the deadline")
	}
	for _, s := range []string{
		"not ready after",
		"Deployment gpuvc-manager: 0/2 replicas available; pod gpuvc-manager-x cannot be scheduled: 0/4 nodes are available",
		"Service gpuvc-webhook: no ready endpoints",
	} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error does not say %q:\n%v", s, err)
		}
	}
}
