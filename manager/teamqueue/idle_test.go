package teamqueue_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gpuvcv1 "github.com/gpuvc/gpuvc/api/v1alpha1"
	"github.com/gpuvc/gpuvc/e2e/testsupport/poll"
	"github.com/gpuvc/gpuvc/e2e/testsupport/testobj"
	"github.com/gpuvc/gpuvc/manager/idle"
)

// fixedUtilization is what the node agents report of each pod's GPUs
// (idle.Utilization), by namespace/name; it does not change during the test.
type fixedUtilization map[string]float64

func (u fixedUtilization) PodGPUUtilization(_ context.Context, ns, name string) (float64, bool, error) {
	p, ok := u[ns+"/"+name]
	return p, ok, nil
}

// TestIdleEvictionReturnsTheQuotaToTheCohort: on pool "idlend" (one kwok node,
// 2 GPUs) team nap (1 GPU guaranteed, spec.idle.gpuPods: Evict after 5m at or
// below 5 %) runs a pod its agent reports at 0 %; team eager (1 guaranteed, may
// borrow 1) runs one and has a second waiting — the cohort has nothing to lend
// while nap's pod holds its guarantee. gpuvc's idle reaper (the manager's
// GPUPodReaper, its clock a fake one moved past spec.idle.gpuPods.after)
// evicts nap's pod with a GPUIdle event; Kueue drops its Workload, nap's
// ClusterQueue uses nothing, and eager's waiting pod is admitted on the GPU it
// borrows from nap (eager's status: 2 used, 1 borrowed; nap's: 1 lent).
func TestIdleEvictionReturnsTheQuotaToTheCohort(t *testing.T) {
	ctx := integration(t)
	const pool = "idlend"
	gpuPool(ctx, t, pool, 2)
	createTeam(ctx, t, testobj.Team("nap", pool).GPUs(1).Queued().IdleGPUPods(5*time.Minute, gpuvcv1.IdleActionEvict, 5).Obj())
	createTeam(ctx, t, testobj.Team("eager", pool).GPUs(1).Borrow(1).Obj())
	waitActive(ctx, t, "nap")
	waitActive(ctx, t, "eager")
	napNS := gpuvcv1.HostNamespace("nap")
	dumpWorkloadsOnFailure(t, napNS)
	dumpWorkloadsOnFailure(t, gpuvcv1.HostNamespace("eager"))

	queuePod(ctx, t, "nap", "nap-0", "")
	waitAdmitted(ctx, t, "nap", true, "nap-0")
	queuePod(ctx, t, "eager", "run-0", "")
	waitAdmitted(ctx, t, "eager", true, "run-0")
	queuePod(ctx, t, "eager", "run-1", "")
	waitQueueFigures(ctx, t, "eager", queueFigures{admitted: 1, pending: 1, usedGPUs: 1})
	waitAdmitted(ctx, t, "eager", true, "run-0")
	wl, err := workloadOf(ctx, napNS, "nap-0")
	if err != nil || wl == nil {
		t.Fatalf("the Workload of nap-0: %v, %v", wl, err)
	}
	life := followWorkload(ctx, t, napNS, wl.GetName())

	util := fixedUtilization{napNS + "/nap-0": 0, gpuvcv1.HostNamespace("eager") + "/run-0": 80}
	b := events.NewBroadcaster(&events.EventSinkImpl{Interface: host.Client.EventsV1()})
	if err := b.StartRecordingToSinkWithContext(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Shutdown)
	clk := clocktesting.NewFakeClock(time.Now())
	reaper := idle.NewGPUPodReaper(c, c, b.NewRecorder(scheme.Scheme, "gpuvc-idle"), util, clk)
	reaper.Tick(ctx)
	clk.Step(4 * time.Minute)
	reaper.Tick(ctx)
	if p, err := podGone(ctx, napNS, "nap-0"); err != nil || p {
		t.Fatalf("nap-0 evicted before spec.idle.gpuPods.after (gone %v, %v)", p, err)
	}
	clk.Step(time.Minute)
	evicted := time.Now()
	reaper.Tick(ctx)

	note := hostEventNote(ctx, t, napNS, "nap-0", "GPUIdle")
	if !strings.Contains(note, "for 5m0s") || !strings.Contains(note, "evicting it") {
		t.Errorf("GPUIdle on nap-0: %q; want the 5m it was idle and the eviction", note)
	}
	waitPodGone(ctx, t, napNS, "nap-0")
	t.Logf("idle eviction → nap-0 gone: %v", time.Since(evicted).Round(time.Millisecond))
	t.Logf("nap-0's Workload %s: %s", wl.GetName(), life.waitDeleted(ctx, t, "the Workload of the idle pod"))
	t.Logf("idle eviction → nap-0's Workload gone: %v", time.Since(evicted).Round(time.Millisecond))
	waitQueueFigures(ctx, t, "nap", queueFigures{})
	t.Logf("idle eviction → nap's ClusterQueue uses nothing: %v", time.Since(evicted).Round(time.Millisecond))
	waitAdmitted(ctx, t, "eager", true, "run-0", "run-1")
	t.Logf("idle eviction → eager's waiting pod admitted and running: %v", time.Since(evicted).Round(time.Millisecond))
	waitQueueFigures(ctx, t, "eager", queueFigures{admitted: 2, usedGPUs: 2})
	poll.UntilSeen(ctx, t, time.Minute, "eager borrows 1 GPU, nap lends it (status.queue)", func(ctx context.Context) (bool, string, error) {
		e, n := &gpuvcv1.Team{}, &gpuvcv1.Team{}
		if err := c.Get(ctx, client.ObjectKey{Name: "eager"}, e); err != nil {
			return false, "", err
		}
		if err := c.Get(ctx, client.ObjectKey{Name: "nap"}, n); err != nil {
			return false, "", err
		}
		eq, nq := e.Status.Queue, n.Status.Queue
		if eq == nil || nq == nil || len(nq.Flavors) == 0 {
			return false, fmt.Sprintf("eager %+v, nap %+v", eq, nq), nil
		}
		return eq.UsedGPUs == 2 && eq.BorrowedGPUs == 1 && nq.UsedGPUs == 0 && nq.Flavors[0].Lent == 1,
			fmt.Sprintf("eager %+v, nap %+v", *eq, *nq), nil
	})
}

// podGone says whether pod ns/name is deleted or on its way out.
func podGone(ctx context.Context, ns, name string) (bool, error) {
	p, err := host.Client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return client.IgnoreNotFound(err) == nil, client.IgnoreNotFound(err)
	}
	return p.DeletionTimestamp != nil, nil
}
