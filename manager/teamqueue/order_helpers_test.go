package teamqueue_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/util/retry"

	"github.com/gpuvc/gpuvc/api/contract"
	gpuvcv1 "github.com/gpuvc/gpuvc/api/v1alpha1"
	"github.com/gpuvc/gpuvc/e2e/testsupport/poll"
	"github.com/gpuvc/gpuvc/e2e/testsupport/testobj"
	"github.com/gpuvc/gpuvc/kind/nodepool"
	"github.com/gpuvc/gpuvc/manager/teamqueue"
)

// labelWorkloadPriorityClass is Kueue's label naming a pod's WorkloadPriorityClass:
// gpuvc strips a tenant's spec.priorityClassName, so this label is how a team
// orders its own queued pods — with the classes its spec.queueing.priorityClasses
// lists (gpuvc removes any other).
const labelWorkloadPriorityClass = "kueue.x-k8s.io/priority-class"

// gpuPool adds a kwok node "<pool>-0" with gpus whole A100s in its own pool, so
// a test's teams share GPUs with nobody else; the node goes with the test.
func gpuPool(ctx context.Context, t testing.TB, pool string, gpus int) {
	t.Helper()
	p := nodepool.Pool{Name: pool, Taint: true, Nodes: []nodepool.Node{{
		Name: pool + "-0", CPU: "128", Memory: "1Ti", EphemeralStorage: "2Ti", Pods: 110,
		GPU: &nodepool.GPUs{Product: nodepool.ProductA100_80GB, Count: gpus, MemoryMiB: 81920},
	}}}
	if err := host.AddNodes(ctx, []nodepool.Pool{p}); err != nil {
		t.Fatalf("adding pool %s: %v", pool, err)
	}
	t.Cleanup(func() {
		_ = host.Client.CoreV1().Nodes().Delete(context.Background(), pool+"-0", metav1.DeleteOptions{})
	})
}

// workloadPriorityClass creates Kueue's WorkloadPriorityClass name with value.
func workloadPriorityClass(ctx context.Context, t testing.TB, name string, value int64) {
	t.Helper()
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": teamqueue.GroupVersion.String(), "kind": "WorkloadPriorityClass",
		"metadata": map[string]any{"name": name}, "value": value,
	}}
	r := dc.Resource(teamqueue.GroupVersion.WithResource("workloadpriorityclasses"))
	if _, err := r.Create(ctx, u, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("creating WorkloadPriorityClass %s: %v", name, err)
	}
}

// queuePod creates a one-GPU pod of team (priority class pc, "" for none), checks
// gpuvc queued it and Kueue gated it, and returns once its Workload exists and
// the clock has passed the second it was created in: Kueue orders equal
// priorities by the Workload's creationTimestamp, which has whole seconds, and
// breaks ties by UID (at random), so pods meant to queue in order must not share
// a second.
func queuePod(ctx context.Context, t testing.TB, team, name, pc string) {
	t.Helper()
	ns := gpuvcv1.HostNamespace(team)
	p := testobj.Pod(name, ns).GPUs("1")
	if pc != "" {
		p = p.Label(labelWorkloadPriorityClass, pc)
	}
	created, err := host.Client.CoreV1().Pods(ns).Create(ctx, p.Obj(), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating pod %s/%s: %v", ns, name, err)
	}
	if created.Labels[contract.LabelKueueQueueName] != contract.KueueLocalQueueName || !gated(created) {
		t.Fatalf("pod %s/%s was not queued by gpuvc and gated by Kueue: %s", ns, name, poll.DescribePod(created))
	}
	workloadInItsOwnSecond(ctx, t, ns, name)
}

// workloadInItsOwnSecond waits until a pod's Workload exists and the clock has
// passed the second it was created in (see queuePod).
func workloadInItsOwnSecond(ctx context.Context, t testing.TB, ns, pod string) {
	t.Helper()
	var created time.Time
	poll.Until(ctx, t, time.Minute, "the Workload of pod "+pod, func(ctx context.Context) (bool, error) {
		wl, err := workloadOf(ctx, ns, pod)
		if wl != nil {
			created = wl.GetCreationTimestamp().Time
		}
		return wl != nil, err
	})
	poll.Until(ctx, t, 5*time.Second, "the second after "+created.String(), func(context.Context) (bool, error) {
		return time.Now().Truncate(time.Second).After(created), nil
	})
}

// workloadOf returns the Workload Kueue made for a pod, nil if none yet.
func workloadOf(ctx context.Context, ns, pod string) (*unstructured.Unstructured, error) {
	l, err := dc.Resource(teamqueue.GroupVersion.WithResource("workloads")).Namespace(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	for i := range l.Items {
		for _, o := range l.Items[i].GetOwnerReferences() {
			if o.Kind == "Pod" && o.Name == pod {
				return &l.Items[i], nil
			}
		}
	}
	return nil, nil
}

// ungated lists a team's queued pods Kueue has let through (gate removed), not
// finished or on their way out.
func ungated(ctx context.Context, team string) (map[string]bool, error) {
	l, err := host.Client.CoreV1().Pods(gpuvcv1.HostNamespace(team)).List(ctx, metav1.ListOptions{LabelSelector: contract.LabelKueueQueueName})
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for i := range l.Items {
		p := &l.Items[i]
		if !gated(p) && p.DeletionTimestamp == nil && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
			out[p.Name] = true
		}
	}
	return out, nil
}

// waitAdmitted waits until a team's admitted pods are exactly names (and, with
// running, Running on a node).
func waitAdmitted(ctx context.Context, t testing.TB, team string, running bool, names ...string) {
	t.Helper()
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	poll.UntilSeen(ctx, t, time.Minute, fmt.Sprintf("team %s admitted exactly %v", team, names), func(ctx context.Context) (bool, string, error) {
		got, err := ungated(ctx, team)
		if err != nil || len(got) != len(want) {
			return false, fmt.Sprint(got), err
		}
		for n := range want {
			if !got[n] {
				return false, fmt.Sprint(got), nil
			}
			if running {
				p, err := host.Client.CoreV1().Pods(gpuvcv1.HostNamespace(team)).Get(ctx, n, metav1.GetOptions{})
				if err != nil || p.Status.Phase != corev1.PodRunning {
					return false, fmt.Sprintf("%v; %s not running yet", got, n), err
				}
			}
		}
		return true, fmt.Sprint(got), nil
	})
}

// complete ends a running pod as its container would: phase Succeeded (kwok
// completes only Job pods by itself). Kueue then finishes its Workload and frees
// the GPU. It returns when the accepted status write was sent.
func complete(ctx context.Context, t testing.TB, team, name string) time.Time {
	t.Helper()
	sent, err := completePod(ctx, team, name)
	if err != nil {
		t.Fatalf("completing pod %s of team %s: %v", name, team, err)
	}
	return sent
}

// completePod is complete returning the error.
func completePod(ctx context.Context, team, name string) (time.Time, error) {
	ns := gpuvcv1.HostNamespace(team)
	var sent time.Time
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		p, err := host.Client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		now := metav1.Now()
		p.Status.Phase = corev1.PodSucceeded
		for i := range p.Status.ContainerStatuses {
			cs := &p.Status.ContainerStatuses[i]
			cs.Ready = false
			cs.State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed", FinishedAt: now}}
		}
		sent = time.Now()
		_, err = host.Client.CoreV1().Pods(ns).UpdateStatus(ctx, p, metav1.UpdateOptions{})
		return err
	})
	return sent, err
}
