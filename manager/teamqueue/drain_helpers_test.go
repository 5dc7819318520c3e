package teamqueue_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/gpuvc/gpuvc/api/contract"
	"github.com/gpuvc/gpuvc/e2e/testsupport/poll"
	"github.com/gpuvc/gpuvc/manager/teamqueue"
)

// queueFigures is Kueue's own account of a team's ClusterQueue: the Workloads
// it admitted and those pending, and the whole GPUs its admitted Workloads use.
type queueFigures struct{ admitted, pending, usedGPUs int64 }

func readQueueFigures(ctx context.Context, team string) (queueFigures, error) {
	cq, err := kueueObject(ctx, "ClusterQueue", "", teamqueue.ClusterQueueName(team))
	if err != nil {
		return queueFigures{}, err
	}
	var f queueFigures
	f.admitted, _, _ = unstructured.NestedInt64(cq.Object, "status", "admittedWorkloads")
	f.pending, _, _ = unstructured.NestedInt64(cq.Object, "status", "pendingWorkloads")
	flavors, _, _ := unstructured.NestedSlice(cq.Object, "status", "flavorsUsage")
	for _, fl := range flavors {
		res, _, _ := unstructured.NestedSlice(fl.(map[string]any), "resources")
		for _, r := range res {
			m := r.(map[string]any)
			if m["name"] != contract.ResourceGPU {
				continue
			}
			q, err := resource.ParseQuantity(fmt.Sprint(m["total"]))
			if err != nil {
				return f, fmt.Errorf("ClusterQueue %s: flavorsUsage total %v: %w", cq.GetName(), m["total"], err)
			}
			f.usedGPUs += q.Value()
		}
	}
	return f, nil
}

// waitQueueFigures waits until the team's ClusterQueue shows want.
func waitQueueFigures(ctx context.Context, t *testing.T, team string, want queueFigures) {
	t.Helper()
	poll.UntilSeen(ctx, t, time.Minute, fmt.Sprintf("ClusterQueue of %s: %+v", team, want), func(ctx context.Context) (bool, string, error) {
		got, err := readQueueFigures(ctx, team)
		return err == nil && got == want, fmt.Sprintf("%+v", got), err
	})
}

// workloadLife follows one Workload from now on: the conditions of each
// version the API server sends, and whether it was deleted.
type workloadLife struct {
	mu      sync.Mutex
	seen    []string
	deleted chan struct{}
}

// followWorkload watches Workload ns/name until it is deleted or ctx ends; each
// version seen is told with its time since the watch began.
func followWorkload(ctx context.Context, t *testing.T, ns, name string) *workloadLife {
	t.Helper()
	w, err := dc.Resource(teamqueue.GroupVersion.WithResource("workloads")).Namespace(ns).Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + name})
	if err != nil {
		t.Fatal(err)
	}
	l := &workloadLife{deleted: make(chan struct{})}
	start := time.Now()
	go func() {
		defer w.Stop()
		for ev := range w.ResultChan() {
			u, ok := ev.Object.(*unstructured.Unstructured)
			if !ok {
				continue
			}
			l.mu.Lock()
			l.seen = append(l.seen, fmt.Sprintf("%s at +%v %s finalizers %v", ev.Type, time.Since(start).Round(time.Millisecond), workloadConditions(u), u.GetFinalizers()))
			l.mu.Unlock()
			if ev.Type == watch.Deleted {
				close(l.deleted)
				return
			}
		}
	}()
	return l
}

// waitDeleted waits for the Workload's deletion and returns what it went through.
func (l *workloadLife) waitDeleted(ctx context.Context, t *testing.T, what string) string {
	t.Helper()
	select {
	case <-l.deleted:
	case <-ctx.Done():
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if ctx.Err() != nil {
		t.Fatalf("%s: not deleted; seen: %v", what, l.seen)
	}
	return strings.Join(l.seen, " → ")
}

// workloadConditions renders a Workload's conditions as "Type=Status(Reason)".
func workloadConditions(u *unstructured.Unstructured) string {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	var out []string
	for _, c := range conds {
		m, _ := c.(map[string]any)
		out = append(out, fmt.Sprintf("%v=%v(%v)", m["type"], m["status"], m["reason"]))
	}
	return "[" + strings.Join(out, " ") + "]"
}

// waitPodGone waits until a host pod is deleted (its finalizers gone).
func waitPodGone(ctx context.Context, t *testing.T, ns, name string) {
	t.Helper()
	poll.UntilSeen(ctx, t, time.Minute, "pod "+ns+"/"+name+" gone", func(ctx context.Context) (bool, string, error) {
		p, err := host.Client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, "", nil
		}
		if err != nil {
			return false, "", err
		}
		return false, poll.DescribePod(p) + fmt.Sprintf(", finalizers %v", p.Finalizers), nil
	})
}

// hostEventNote waits for a Warning event with reason on host pod ns/name and
// returns its note.
func hostEventNote(ctx context.Context, t *testing.T, ns, name, reason string) string {
	t.Helper()
	var note string
	poll.UntilSeen(ctx, t, time.Minute, "event "+reason+" on pod "+ns+"/"+name, func(ctx context.Context) (bool, string, error) {
		l, err := host.Client.EventsV1().Events(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, "", err
		}
		var seen []string
		for _, e := range l.Items {
			if e.Regarding.Name != name {
				continue
			}
			if e.Reason == reason && e.Type == corev1.EventTypeWarning {
				note = e.Note
				return true, "", nil
			}
			seen = append(seen, e.Reason)
		}
		return false, fmt.Sprint(seen), nil
	})
	return note
}
