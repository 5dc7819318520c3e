package suite

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/gpuvc/gpuvc/api/contract"
	"github.com/gpuvc/gpuvc/kind/localkueue"
)

// TestHealthTaintTolerationOnTheRealNode (issue 22, class 1): a tenant's pod
// that tolerates the taint gpuvc's health reaction puts on a node with a
// failing GPU never lands on that node. Through the team's own kubeconfig and
// the real vCluster: the host pod arrives without the toleration (the team sees
// TolerationRemoved), the scheduler leaves it Unschedulable for that taint
// while the node carries it, and it runs there once the taint is gone — the
// taint alone kept it off.
func TestHealthTaintTolerationOnTheRealNode(t *testing.T) {
	ctx := e2e(t)
	needsRunningContainers(t)
	createTeam(ctx, t, "tolerant", "--pool", realPool, "--gpus", "1")
	vc := teamClient(t, teamKubeconfig(t, "tolerant"))

	// The agent's taint (gpu/nodeagent: gpuvc.dev/gpu-unhealthy=true:NoSchedule).
	// NoSchedule: the node's running pods (the vCluster control planes, the
	// manager) stay.
	taint := corev1.Taint{Key: contract.TaintGPUUnhealthy, Value: "true", Effect: corev1.TaintEffectNoSchedule}
	setNodeTaints(ctx, t, func(taints []corev1.Taint) []corev1.Taint { return append(taints, taint) })
	untainted := false
	untaint := func() {
		if !untainted {
			untainted = true
			setNodeTaints(context.WithoutCancel(ctx), t, func(taints []corev1.Taint) []corev1.Taint {
				return slices.DeleteFunc(taints, func(x corev1.Taint) bool { return x.Key == taint.Key })
			})
		}
	}
	t.Cleanup(untaint)

	pod := workload("sick", "sleep 3600").GPUs("1").
		Toleration(corev1.Toleration{Key: contract.TaintGPUUnhealthy, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}).Obj()
	host, err := submitVirtualPod(ctx, t, "tolerant", pod)
	require.NoError(t, err)
	for _, tol := range host.Spec.Tolerations {
		require.NotEqual(t, contract.TaintGPUUnhealthy, tol.Key, "the tenant's toleration of the health taint reached the host pod: %+v", host.Spec.Tolerations)
	}
	hosts := backend.Client().CoreV1().Pods(host.Namespace)
	eventually(ctx, t, "the scheduler leaves "+host.Name+" off the tainted node", func(ctx context.Context) (bool, string) {
		p, err := hosts.Get(ctx, host.Name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		if p.Spec.NodeName != "" {
			t.Fatalf("the pod was bound to %s while it carries %s", p.Spec.NodeName, contract.TaintGPUUnhealthy)
		}
		for _, c := range p.Status.Conditions {
			// The scheduler does not name the taint; the node's only other taint is
			// the pool's, which the pod tolerates, and the pod runs once ours is gone.
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable &&
				strings.Contains(c.Message, "untolerated taint") {
				return true, ""
			}
		}
		return false, fmt.Sprintf("conditions %v", p.Status.Conditions)
	})
	eventually(ctx, t, "TolerationRemoved event in the virtual cluster", func(ctx context.Context) (bool, string) {
		events, err := vc.CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + pod.Name})
		if err != nil {
			return false, err.Error()
		}
		var reasons []string
		for _, e := range events.Items {
			if e.Reason == "TolerationRemoved" && strings.Contains(e.Message, contract.TaintGPUUnhealthy) {
				return true, ""
			}
			reasons = append(reasons, e.Reason)
		}
		return false, fmt.Sprint(reasons)
	})

	untaint()
	v := waitVirtualPod(ctx, t, vc, pod.Name, running)
	h, err := hosts.Get(ctx, host.Name, metav1.GetOptions{})
	require.NoError(t, err)
	require.Equal(t, realNodeName, h.Spec.NodeName, "virtual pod %s", v.Name)
}

// setNodeTaints rewrites the real node's taints with a JSON merge patch
// carrying its resourceVersion (taints are an atomic list), retrying on
// conflict.
func setNodeTaints(ctx context.Context, t *testing.T, edit func([]corev1.Taint) []corev1.Taint) {
	t.Helper()
	nodes := backend.Client().CoreV1().Nodes()
	eventually(ctx, t, "taints of "+realNodeName+" written", func(ctx context.Context) (bool, string) {
		n, err := nodes.Get(ctx, realNodeName, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		taints := edit(slices.Clone(n.Spec.Taints))
		if taints == nil {
			taints = []corev1.Taint{}
		}
		patch, err := json.Marshal(map[string]any{
			"metadata": map[string]any{"resourceVersion": n.ResourceVersion},
			"spec":     map[string]any{"taints": taints},
		})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := nodes.Patch(ctx, realNodeName, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			return false, err.Error()
		}
		return true, ""
	})
}

// TestKueuePriorityClassOnTheRealNode (issue 22, class 3): a team's pod
// labelled with a WorkloadPriorityClass the team may not use runs with the
// team's own priority. Kueue v0.17 runs beside the control plane for this
// test; a queueing team may name WorkloadPriorityClass e2e-team (value 100)
// and not e2e-high (value 1,000,000). Through the team's kubeconfig and the
// real vCluster: the pod labelled e2e-high arrives on the host without the
// label (the team sees KueueLabelRemoved), Kueue's Workload for it has
// priority 0, and it runs on the real node; the pod labelled e2e-team keeps
// its class (priority 100).
func TestKueuePriorityClassOnTheRealNode(t *testing.T) {
	ctx := e2e(t)
	needsRunningContainers(t)
	if _, onKind := backend.(*kindBackend); onKind {
		// Kueue runs as a process of this machine (kind/localkueue) with its
		// webhooks on 127.0.0.1, which kind's API server, in its node
		// container, cannot call. The local backend's API server can.
		t.Skip("Kueue beside the cluster: its webhooks on this machine's loopback are out of reach of kind's API server (runs on the local backend)")
	}
	startKueue(ctx, t)
	// The manager looks for Kueue when it starts (gpuvc install says so).
	restartManager(ctx, t)
	dc, err := dynamic.NewForConfig(backend.Config())
	require.NoError(t, err)
	classes := dc.Resource(kueueGV.WithResource("workloadpriorityclasses"))
	for name, value := range map[string]int64{"e2e-high": 1000000, "e2e-team": 100} {
		_, err := classes.Create(ctx, &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": kueueGV.String(), "kind": "WorkloadPriorityClass",
			"metadata": map[string]any{"name": name}, "value": value,
		}}, metav1.CreateOptions{})
		if !apierrors.IsAlreadyExists(err) {
			require.NoError(t, err)
		}
		t.Cleanup(func() { _ = classes.Delete(context.Background(), name, metav1.DeleteOptions{}) })
	}
	applyTeam(ctx, t, "ranked", `apiVersion: gpuvc.dev/v1alpha1
kind: Team
metadata: {name: ranked}
spec:
  pool: `+realPool+`
  quota: {gpus: 2}
  queueing: {priorityClasses: [e2e-team]}
`)
	vc := teamClient(t, teamKubeconfig(t, "ranked"))
	workloads := dc.Resource(kueueGV.WithResource("workloads")).Namespace("team-ranked")
	for _, tc := range []struct {
		pod, class   string
		keeps        bool
		wantPriority int64
	}{
		{pod: "outrank", class: "e2e-high", keeps: false, wantPriority: 0},
		{pod: "batch", class: "e2e-team", keeps: true, wantPriority: 100},
	} {
		t.Run(tc.pod, func(t *testing.T) {
			pod := workload(tc.pod, "sleep 3600").GPUs("1").Label(contract.LabelKueuePriorityClass, tc.class).Obj()
			host, err := submitVirtualPod(ctx, t, "ranked", pod)
			require.NoError(t, err)
			got, has := host.Labels[contract.LabelKueuePriorityClass]
			require.Equal(t, tc.keeps, has && got == tc.class, "host pod labels %v", host.Labels)
			require.Equal(t, contract.KueueLocalQueueName, host.Labels[contract.LabelKueueQueueName], "the pod waits in the team's queue")
			eventually(ctx, t, "Kueue's Workload of "+host.Name, func(ctx context.Context) (bool, string) {
				l, err := workloads.List(ctx, metav1.ListOptions{})
				if err != nil {
					return false, err.Error()
				}
				for _, w := range l.Items {
					for _, o := range w.GetOwnerReferences() {
						if o.Kind == "Pod" && o.Name == host.Name {
							p, _, _ := unstructured.NestedInt64(w.Object, "spec", "priority")
							if p != tc.wantPriority {
								t.Fatalf("Workload %s has priority %d, want %d (spec %v)", w.GetName(), p, tc.wantPriority, w.Object["spec"])
							}
							return true, ""
						}
					}
				}
				return false, fmt.Sprintf("%d workloads, none of pod %s", len(l.Items), host.Name)
			})
			waitVirtualPod(ctx, t, vc, tc.pod, running)
			if !tc.keeps {
				eventually(ctx, t, "KueueLabelRemoved event in the virtual cluster", func(ctx context.Context) (bool, string) {
					events, err := vc.CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + tc.pod})
					if err != nil {
						return false, err.Error()
					}
					var reasons []string
					for _, e := range events.Items {
						if e.Reason == "KueueLabelRemoved" && strings.Contains(e.Message, tc.class) {
							return true, ""
						}
						reasons = append(reasons, e.Reason)
					}
					return false, fmt.Sprint(reasons)
				})
			}
		})
	}
}

var kueueGV = schema.GroupVersion{Group: contract.KueueGroup, Version: contract.KueueAPIVersion}

// startKueue runs Kueue beside the backend's control plane until the test
// ends; its webhook configurations go with it (with Kueue gone they would
// refuse the pods they cover in later tests).
func startKueue(ctx context.Context, t *testing.T) {
	t.Helper()
	k, err := localkueue.Start(ctx, backend.Config(), localkueue.Options{Dir: t.TempDir(), Log: logWriter})
	require.NoError(t, err)
	t.Cleanup(func() {
		hooks := backend.Client().AdmissionregistrationV1()
		_ = hooks.MutatingWebhookConfigurations().Delete(context.Background(), localkueue.MutatingConfigName, metav1.DeleteOptions{})
		_ = hooks.ValidatingWebhookConfigurations().Delete(context.Background(), localkueue.ValidatingConfigName, metav1.DeleteOptions{})
		_ = k.Stop()
	})
}

// restartManager restarts the gpuvc manager's Deployment, as `kubectl rollout
// restart` does, and waits until the new pods are available.
func restartManager(ctx context.Context, t *testing.T) {
	t.Helper()
	deployments := backend.Client().AppsV1().Deployments(gpuvcNamespace)
	patch := fmt.Sprintf(`{"spec":{"template":{"metadata":{"annotations":{"e2e.gpuvc.dev/restarted":%q}}}}}`, t.Name())
	_, err := deployments.Patch(ctx, "gpuvc-manager", types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	require.NoError(t, err)
	eventually(ctx, t, "the restarted gpuvc manager available", func(ctx context.Context) (bool, string) {
		d, err := deployments.Get(ctx, "gpuvc-manager", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		s := d.Status
		want := int32(1)
		if d.Spec.Replicas != nil {
			want = *d.Spec.Replicas
		}
		if !(s.ObservedGeneration >= d.Generation && s.UpdatedReplicas == want && s.AvailableReplicas == want && s.Replicas == want) {
			return false, fmt.Sprintf("generation %d observed %d, updated %d available %d of %d", d.Generation, s.ObservedGeneration, s.UpdatedReplicas, s.AvailableReplicas, want)
		}
		// The Deployment's status leaves terminating pods out, but the old
		// manager still runs until it has exited — and with leader election
		// off (the local stack) it still acts: a team put to sleep by it gets
		// its waker address, which then refuses connections. Wait until it is
		// gone.
		pods, err := backend.Client().CoreV1().Pods(gpuvcNamespace).List(ctx, metav1.ListOptions{LabelSelector: metav1.FormatLabelSelector(d.Spec.Selector)})
		if err != nil {
			return false, err.Error()
		}
		return int32(len(pods.Items)) == want, fmt.Sprintf("%d manager pods (old ones still terminating), want %d", len(pods.Items), want)
	})
}

// applyTeam applies a Team manifest with the CLI, waits until it is Ready and
// deletes it when the test ends.
func applyTeam(ctx context.Context, t *testing.T, name, manifest string) {
	t.Helper()
	exportWhenNamespaceExists(ctx, name)
	file := filepath.Join(t.TempDir(), name+".yaml")
	require.NoError(t, os.WriteFile(file, []byte(manifest), 0o600))
	r := gpuvc(t, "team", "apply", "-f", file, "--wait", "--timeout", "3m")
	require.Equal(t, 0, r.code, "stdout: %s\nstderr: %s", r.out, r.errOut)
	t.Cleanup(func() { gpuvc(t, "team", "delete", name, "--wait") })
	t.Cleanup(func() { dumpTeamIfFailed(t, name) })
	vc := teamClient(t, teamKubeconfig(t, name))
	eventually(ctx, t, "team "+name+"'s API server answering", func(ctx context.Context) (bool, string) {
		_, err := vc.Discovery().ServerVersion()
		return err == nil, fmt.Sprint(err)
	})
}
