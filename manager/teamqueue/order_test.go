package teamqueue_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/gpuvc/gpuvc/api/contract"
	gpuvcv1 "github.com/gpuvc/gpuvc/api/v1alpha1"
	"github.com/gpuvc/gpuvc/e2e/testsupport/poll"
	"github.com/gpuvc/gpuvc/e2e/testsupport/testobj"
	"github.com/gpuvc/gpuvc/syncer/queued"
)

// Priorities of the tests' WorkloadPriorityClasses.
const (
	pcLow, pcMid, pcHigh = "gpuvc-test-low", "gpuvc-test-mid", "gpuvc-test-high"
)

func priorityClasses(ctx context.Context, t *testing.T) {
	t.Helper()
	workloadPriorityClass(ctx, t, pcLow, 100)
	workloadPriorityClass(ctx, t, pcMid, 200)
	workloadPriorityClass(ctx, t, pcHigh, 300)
}

// admittedInItsOwnSecond waits until a pod's Workload holds quota and the clock
// has passed the second of that decision: Kueue preempts the most recently
// admitted first, by the QuotaReserved condition's lastTransitionTime (whole
// seconds, ties broken by UID).
func admittedInItsOwnSecond(ctx context.Context, t *testing.T, team, pod string) {
	t.Helper()
	var at time.Time
	poll.Until(ctx, t, time.Minute, "quota reserved for "+pod, func(ctx context.Context) (bool, error) {
		wl, err := workloadOf(ctx, gpuvcv1.HostNamespace(team), pod)
		if wl == nil || err != nil {
			return false, err
		}
		conds, _, _ := unstructured.NestedSlice(wl.Object, "status", "conditions")
		for _, c := range conds {
			m, _ := c.(map[string]any)
			if m["type"] == "QuotaReserved" && m["status"] == "True" {
				ts, _ := m["lastTransitionTime"].(string)
				parsed, err := time.Parse(time.RFC3339, ts)
				at = parsed
				return err == nil, err
			}
		}
		return false, nil
	})
	poll.Until(ctx, t, 5*time.Second, "the second after "+at.String(), func(context.Context) (bool, error) {
		return time.Now().Truncate(time.Second).After(at), nil
	})
}

// evictions records, in the order the API server reports them, the pods of a
// namespace that Kueue stops: marked TerminationTarget or deleted.
type evictions struct {
	mu    sync.Mutex
	order []string
}

func watchEvictions(ctx context.Context, t *testing.T, ns string) *evictions {
	t.Helper()
	w, err := host.Client.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{LabelSelector: contract.LabelKueueQueueName})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	ev := &evictions{}
	go func() {
		for e := range w.ResultChan() {
			p, ok := e.Object.(*corev1.Pod)
			if !ok || !(e.Type == watch.Deleted || p.DeletionTimestamp != nil || stopped(p)) {
				continue
			}
			ev.mu.Lock()
			if !slices.Contains(ev.order, p.Name) {
				ev.order = append(ev.order, p.Name)
			}
			ev.mu.Unlock()
		}
	}()
	return ev
}

func (e *evictions) seen() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.order)
}

// stopped: Kueue's plain-Pod integration marks a pod it stops with the
// condition TerminationTarget before deleting it.
func stopped(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == "TerminationTarget" && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

// TestReclaimEvictsBorrowedPodsInKueueOrder: pool "reclaim" has 4 GPUs; team
// owner is guaranteed 2 and uses none, team guest is guaranteed 2 and borrows
// up to 2. Guest runs 4 pods: g-low (lowest priority, admitted first, inside
// its guarantee), then g-1, g-2, g-3 (equal priority, admitted in that order, a
// second apart). When owner queues 2 pods, Kueue v0.17 preempts guest's pods
// in its documented candidate order (pkg/scheduler/preemption/common,
// CandidatesOrdering: other ClusterQueues first, then lower priority, then the
// most recently admitted): g-low, then g-3 — which pod is evicted does not
// depend on whether it was admitted inside the guarantee. The evicted pod's
// team sees why on the host pod (vCluster syncs host pod events to the
// team's pod): Kueue's Normal event Stopped with its preemption message, and
// gpuvc's Warning Preempted in the team's terms — not a Queued event, though
// the evicted Workload waits again (QuotaReserved=False) while its pod stops.
func TestReclaimEvictsBorrowedPodsInKueueOrder(t *testing.T) {
	integration(t)
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	priorityClasses(ctx, t)
	gpuPool(ctx, t, "reclaim", 4)
	createTeam(ctx, t, testobj.Team("owner", "reclaim").GPUs(2).Queued().WorkloadPriorityClasses(pcLow, pcMid, pcHigh).Obj())
	createTeam(ctx, t, testobj.Team("guest", "reclaim").GPUs(2).Borrow(2).WorkloadPriorityClasses(pcLow, pcMid, pcHigh).Obj())
	waitActive(ctx, t, "owner")
	waitActive(ctx, t, "guest")
	guestNS := gpuvcv1.HostNamespace("guest")
	dumpWorkloadsOnFailure(t, guestNS)
	dumpWorkloadsOnFailure(t, gpuvcv1.HostNamespace("owner"))

	var admitted []string
	for _, p := range []struct{ name, pc string }{{"g-low", pcLow}, {"g-1", pcMid}, {"g-2", pcMid}, {"g-3", pcMid}} {
		queuePod(ctx, t, "guest", p.name, p.pc)
		admitted = append(admitted, p.name)
		waitAdmitted(ctx, t, "guest", true, admitted...)
		admittedInItsOwnSecond(ctx, t, "guest", p.name)
	}

	ev := watchEvictions(ctx, t, guestNS)
	queuePod(ctx, t, "owner", "o-0", pcMid)
	queuePod(ctx, t, "owner", "o-1", pcMid)
	waitAdmitted(ctx, t, "owner", true, "o-0", "o-1")
	waitAdmitted(ctx, t, "guest", true, "g-1", "g-2")
	if got, want := ev.seen(), []string{"g-low", "g-3"}; !slices.Equal(got, want) {
		t.Errorf("guest's pods were stopped in the order %v, want %v (lowest priority first, then the most recently admitted)", got, want)
	}

	podEvent(ctx, t, guestNS, "g-low", "Normal", "Stopped", "Preempted to accommodate a workload", "reclamation within the cohort")
	podEvent(ctx, t, guestNS, "g-low", "Warning", queued.ReasonPreempted,
		"preempted: team guest was using GPUs beyond its guarantee, and another team of cohort gpuvc-reclaim took back its own guaranteed GPUs")
	noPodEvent(ctx, t, guestNS, "g-low", queued.ReasonQueued)
}

// TestQueuedPodsAreAdmittedByPriorityThenFIFO: team line is guaranteed the one
// GPU of pool "fifo" (and may borrow 4 that nobody lends: its ResourceQuota
// ceiling of 5 GPUs is what lets 4 pods queue behind the running one — a
// queued, gated pod counts against the ResourceQuota). Queued in the order
// q-a (mid), q-low (low), q-b (mid), q-high (high), each a second apart, they
// are admitted one by one as the running pod completes, in Kueue's
// BestEffortFIFO order: higher priority first, then the older Workload:
// q-high, q-a, q-b, q-low. Finally a high-priority pod arriving while q-low
// runs preempts it (withinClusterQueue: LowerPriority).
func TestQueuedPodsAreAdmittedByPriorityThenFIFO(t *testing.T) {
	integration(t)
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	priorityClasses(ctx, t)
	gpuPool(ctx, t, "fifo", 1)
	createTeam(ctx, t, testobj.Team("line", "fifo").GPUs(1).Borrow(4).WorkloadPriorityClasses(pcLow, pcMid, pcHigh).Obj())
	waitActive(ctx, t, "line")
	ns := gpuvcv1.HostNamespace("line")
	dumpWorkloadsOnFailure(t, ns)

	// The running pod has the highest priority, so nothing queued preempts it.
	queuePod(ctx, t, "line", "running", pcHigh)
	waitAdmitted(ctx, t, "line", true, "running")
	for _, p := range []struct{ name, pc string }{{"q-a", pcMid}, {"q-low", pcLow}, {"q-b", pcMid}, {"q-high", pcHigh}} {
		queuePod(ctx, t, "line", p.name, p.pc)
	}
	waitAdmitted(ctx, t, "line", true, "running")

	prev := "running"
	for _, next := range []string{"q-high", "q-a", "q-b", "q-low"} {
		complete(ctx, t, "line", prev)
		waitAdmitted(ctx, t, "line", true, next)
		prev = next
	}

	ev := watchEvictions(ctx, t, ns)
	queuePod(ctx, t, "line", "urgent", pcHigh)
	waitAdmitted(ctx, t, "line", true, "urgent")
	if got := ev.seen(); !slices.Equal(got, []string{"q-low"}) {
		t.Errorf("pods stopped for the high-priority pod: %v, want [q-low]", got)
	}
	podEvent(ctx, t, ns, "q-low", "Warning", queued.ReasonPreempted, "preempted: a higher-priority pod of team line needed its GPUs")
}

// podEvent waits for an event on a pod with type, reason and a note holding
// every part, and logs it: what the team sees on its pod (vCluster syncs host
// pod events to the virtual pod).
func podEvent(ctx context.Context, t *testing.T, ns, pod, typ, reason string, parts ...string) {
	t.Helper()
	poll.UntilSeen(ctx, t, time.Minute, fmt.Sprintf("a %s event %s on pod %s/%s with %q", typ, reason, ns, pod, parts), func(ctx context.Context) (bool, string, error) {
		evs, err := host.Client.EventsV1().Events(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, "", err
		}
		var seen []string
		for _, e := range evs.Items {
			if e.Regarding.Name != pod || e.Regarding.Kind != "Pod" {
				continue
			}
			seen = append(seen, e.Type+" "+e.Reason+": "+e.Note)
			ok := e.Type == typ && e.Reason == reason
			for _, p := range parts {
				ok = ok && strings.Contains(e.Note, p)
			}
			if ok {
				t.Logf("pod %s: %s %s: %s", pod, e.Type, e.Reason, e.Note)
				return true, "", nil
			}
		}
		return false, strings.Join(seen, " | "), nil
	})
}

// noPodEvent fails if the pod has an event with reason.
func noPodEvent(ctx context.Context, t *testing.T, ns, pod, reason string) {
	t.Helper()
	evs, err := host.Client.EventsV1().Events(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range evs.Items {
		if e.Regarding.Name == pod && e.Reason == reason {
			t.Errorf("pod %s/%s got a %s event: %s", ns, pod, reason, e.Note)
		}
	}
}
