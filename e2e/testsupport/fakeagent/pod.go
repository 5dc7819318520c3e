package fakeagent

import (
	"context"
	"fmt"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"helm.sh/helm/v3/pkg/releaseutil"

	"github.com/gpuvc/gpuvc/charts/installer"
)

// RecordPod creates namespace ns (removed when the test ends) and in it an
// agent pod carrying the labels the chart (as `gpuvc install` renders it) gives
// the agent DaemonSet's pods, recorded as running at the agent's address. The
// pod is never scheduled (no node matches it); only its status says Running.
func (a *Agent) RecordPod(ctx context.Context, t testing.TB, c client.Client, ns string) {
	t.Helper()
	labels, err := ChartAgentLabels(ctx)
	if err != nil {
		t.Fatal(err)
	}
	nsObj := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}
	if err := c.Create(ctx, nsObj); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Delete(context.Background(), nsObj) })
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "gpuvc-agent-x1", Namespace: ns, Labels: labels},
		Spec: corev1.PodSpec{
			NodeSelector: map[string]string{"gpuvc.dev/pool": "no-such-pool"},
			Containers:   []corev1.Container{{Name: "agent", Image: "ghcr.io/gpuvc/gpuvc:test"}},
		},
	}
	if err := c.Create(ctx, p); err != nil {
		t.Fatal(err)
	}
	// The scheduler writes the pod's status too (unschedulable): re-read on a conflict.
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := c.Get(ctx, client.ObjectKeyFromObject(p), p); err != nil {
			return err
		}
		p.Status.Phase, p.Status.PodIP, p.Status.PodIPs = corev1.PodRunning, a.IP, []corev1.PodIP{{IP: a.IP}}
		return c.Status().Update(ctx, p)
	})
	if err != nil {
		t.Fatalf("recording agent pod %s/%s as running at %s: %v", ns, p.Name, a.IP, err)
	}
}

// ChartAgentLabels are the pod labels of the chart's agent DaemonSet with the
// default values.
func ChartAgentLabels(ctx context.Context) (map[string]string, error) {
	r, err := installer.Render(ctx, installer.DefaultNamespace, nil)
	if err != nil {
		return nil, err
	}
	for _, doc := range releaseutil.SplitManifests(r.Manifest) {
		ds := &appsv1.DaemonSet{}
		if err := yaml.Unmarshal([]byte(doc), ds); err != nil || ds.Kind != "DaemonSet" || ds.Name != "gpuvc-agent" {
			continue
		}
		return ds.Spec.Template.Labels, nil
	}
	return nil, fmt.Errorf("the chart rendered with its defaults has no DaemonSet gpuvc-agent")
}
