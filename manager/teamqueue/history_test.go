package teamqueue_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"

	"github.com/gpuvc/gpuvc/api/contract"
	gpuvcv1 "github.com/gpuvc/gpuvc/api/v1alpha1"
	"github.com/gpuvc/gpuvc/e2e/testsupport/poll"
	"github.com/gpuvc/gpuvc/e2e/testsupport/testobj"
	"github.com/gpuvc/gpuvc/manager/teamqueue"
)

// The usage-history pools of the package's manager (historyPools).
const (
	poolHistoryTest    = "hist"
	poolHistoryMembers = "histm"
	poolHistoryBench   = "fairh"
	// poolSwitched is not among them: TestPoolSwitchesToUsageHistory restarts
	// the manager with it added.
	poolSwitched = "histsw"
)

// waitLocalQueueActive waits until the team's LocalQueue is Active (Kueue found
// its ClusterQueue active) and points at clusterQueue.
func waitLocalQueueActive(ctx context.Context, t testing.TB, team, clusterQueue string) {
	t.Helper()
	poll.UntilSeen(ctx, t, time.Minute, "LocalQueue of "+team+" Active on "+clusterQueue, func(ctx context.Context) (bool, string, error) {
		lq, err := kueueObject(ctx, "LocalQueue", gpuvcv1.HostNamespace(team), contract.KueueLocalQueueName)
		if err != nil {
			return false, err.Error(), nil
		}
		cq, _, _ := unstructured.NestedString(lq.Object, "spec", "clusterQueue")
		st, msg := condition(lq, "Active")
		return st == "True" && cq == clusterQueue, fmt.Sprintf("clusterQueue %s, Active %s: %s", cq, st, msg), nil
	})
}

// consumedGPUs is Kueue's decayed past use of whole GPUs by the team's
// LocalQueue (status.fairSharing.admissionFairSharingStatus.consumedResources).
func consumedGPUs(ctx context.Context, team string) (float64, error) {
	lq, err := kueueObject(ctx, "LocalQueue", gpuvcv1.HostNamespace(team), contract.KueueLocalQueueName)
	if err != nil {
		return 0, err
	}
	v, ok, _ := unstructured.NestedString(lq.Object, "status", "fairSharing", "admissionFairSharingStatus", "consumedResources", contract.ResourceGPU)
	if !ok {
		return 0, nil
	}
	q, err := resource.ParseQuantity(v)
	if err != nil {
		return 0, err
	}
	return q.AsApproximateFloat64(), nil
}

// TestUsageHistoryAdmitsTheLighterUsedTeamFirst: in a usage-history pool two
// teams, each guaranteeing 1 GPU, share one ClusterQueue of 2 GPUs. The heavy
// team runs both GPUs while the light one is idle, so Kueue's record of its
// past use grows. Then heavy queues a pod, and a second later light queues
// one: when one of heavy's pods ends, the freed GPU goes to light, whose pod
// is younger — without the history Kueue would admit the older pod first
// (BestEffortFIFO, TestQueuedPodsAreAdmittedByPriorityThenFIFO).
func TestUsageHistoryAdmitsTheLighterUsedTeamFirst(t *testing.T) {
	ctx := integration(t)
	pool := poolHistoryTest
	gpuPool(ctx, t, pool, 2)
	shared := teamqueue.PoolClusterQueueName(pool)
	for _, name := range []string{"hheavy", "hlight"} {
		// Queue depth 2: heavy runs 2 (the pool's whole quota, beyond its
		// guarantee) and queues 1.
		createTeam(ctx, t, testobj.Team(name, pool).GPUs(1).Queued().MaxQueued(2).Obj())
		dumpWorkloadsOnFailure(t, gpuvcv1.HostNamespace(name))
	}
	for _, name := range []string{"hheavy", "hlight"} {
		waitLocalQueueActive(ctx, t, name, shared)
	}
	poll.UntilSeen(ctx, t, time.Minute, "the pool's ClusterQueue with both teams' guarantees and usage-based admission", func(ctx context.Context) (bool, string, error) {
		cq, err := kueueObject(ctx, "ClusterQueue", "", shared)
		if err != nil {
			return false, err.Error(), nil
		}
		mode, _, _ := unstructured.NestedString(cq.Object, "spec", "admissionScope", "admissionMode")
		q := quotas(t, cq)[teamqueue.FlavorName(pool, "")+"/"+contract.ResourceGPU]
		return mode == teamqueue.AdmissionFairSharingMode && q == "2 0 -", fmt.Sprintf("admissionMode %q, GPU quota %q", mode, q), nil
	})

	queuePod(ctx, t, "hheavy", "h-1", "")
	queuePod(ctx, t, "hheavy", "h-2", "")
	waitAdmitted(ctx, t, "hheavy", true, "h-1", "h-2")
	// Kueue samples the LocalQueue's use every second (usageHistory); with a
	// half-life of 30 s, 2 GPUs held for ~7 s weigh 0.3.
	poll.UntilSeen(ctx, t, time.Minute, "heavy's past use of GPUs at least 0.3", func(ctx context.Context) (bool, string, error) {
		heavy, err := consumedGPUs(ctx, "hheavy")
		return heavy >= 0.3, fmt.Sprint(heavy), err
	})
	if light, err := consumedGPUs(ctx, "hlight"); err != nil || light != 0 {
		t.Fatalf("light's past use is %v (err %v), want 0: it ran nothing", light, err)
	}

	queuePod(ctx, t, "hheavy", "h-3", "") // older than l-1
	queuePod(ctx, t, "hlight", "l-1", "")
	// What the team sees on its waiting pod: the pool's shared quota, no cohort.
	podEvent(ctx, t, gpuvcv1.HostNamespace("hheavy"), "h-3", "Warning", "Queued",
		"queued: team hheavy uses 2 GPUs of the 2 its pool's teams share, where the team with the least recent use for its weight goes first; Kueue: ")
	complete(ctx, t, "hheavy", "h-1")
	waitAdmitted(ctx, t, "hlight", false, "l-1")
	if got, err := ungated(ctx, "hheavy"); err != nil || len(got) != 1 || !got["h-2"] {
		t.Fatalf("heavy's admitted pods are %v (err %v), want only h-2: h-3 must wait behind the lighter-used team", got, err)
	}
	// The teams see it in their status: light uses its 1 GPU, heavy 1 with 1 queued.
	expectGPUStanding(ctx, t, "hlight", 1, 0)
	expectGPUStanding(ctx, t, "hheavy", 1, 1)

	// The next GPU to free goes to heavy's waiting pod: nobody else waits.
	complete(ctx, t, "hheavy", "h-2")
	waitAdmitted(ctx, t, "hheavy", false, "h-3")
}

// sharedQueueOf describes a usage-history pool's ClusterQueue as "<GPU quota>
// owners=<Teams> namespaces=<selected>", or "gone".
func sharedQueueOf(ctx context.Context, t *testing.T, pool string) (string, error) {
	cq, err := kueueObject(ctx, "ClusterQueue", "", teamqueue.PoolClusterQueueName(pool))
	if apierrors.IsNotFound(err) {
		return "gone", nil
	}
	if err != nil {
		return "", err
	}
	var owners []string
	for _, o := range cq.GetOwnerReferences() {
		owners = append(owners, o.Name)
	}
	exprs, _, _ := unstructured.NestedSlice(cq.Object, "spec", "namespaceSelector", "matchExpressions")
	var namespaces []any
	if len(exprs) == 1 {
		namespaces, _, _ = unstructured.NestedSlice(exprs[0].(map[string]any), "values")
	}
	return fmt.Sprintf("%s owners=%v namespaces=%v", quotas(t, cq)[teamqueue.FlavorName(pool, "")+"/"+contract.ResourceGPU], owners, namespaces), nil
}

// waitSharedQueue waits until the pool's ClusterQueue is as want (sharedQueueOf).
func waitSharedQueue(ctx context.Context, t *testing.T, pool, want string) {
	t.Helper()
	poll.UntilSeen(ctx, t, 3*time.Minute, "the ClusterQueue of pool "+pool+": "+want, func(ctx context.Context) (bool, string, error) {
		got, err := sharedQueueOf(ctx, t, pool)
		return got == want, got, err
	})
}

// TestUsageHistoryPoolQueueFollowsItsTeams: the pool's shared ClusterQueue is
// its queueing teams' (quota, owners, namespaces) as they come, stop queueing
// and go; the garbage collector's dropping a deleted Team's reference wakes the
// others, and the last one's deletion takes the ClusterQueue with it.
func TestUsageHistoryPoolQueueFollowsItsTeams(t *testing.T) {
	ctx := integration(t)
	pool := poolHistoryMembers
	createTeam(ctx, t, testobj.Team("hm1", pool).GPUs(1).Queued().Obj())
	createTeam(ctx, t, testobj.Team("hm2", pool).GPUs(2).Queued().Weight(3).Obj())
	waitSharedQueue(ctx, t, pool, "3 0 - owners=[hm1 hm2] namespaces=[team-hm1 team-hm2]")
	waitLocalQueueActive(ctx, t, "hm2", teamqueue.PoolClusterQueueName(pool))

	setQueueing := func(name string, q *gpuvcv1.Queueing) {
		t.Helper()
		if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			tm := &gpuvcv1.Team{}
			if err := c.Get(ctx, types.NamespacedName{Name: name}, tm); err != nil {
				return err
			}
			tm.Spec.Queueing = q
			return c.Update(ctx, tm)
		}); err != nil {
			t.Fatalf("setting spec.queueing of %s: %v", name, err)
		}
	}
	setQueueing("hm2", nil)
	waitSharedQueue(ctx, t, pool, "1 0 - owners=[hm1] namespaces=[team-hm1]")
	poll.Until(ctx, t, time.Minute, "hm2's LocalQueue removed", func(ctx context.Context) (bool, error) {
		_, err := kueueObject(ctx, "LocalQueue", gpuvcv1.HostNamespace("hm2"), contract.KueueLocalQueueName)
		return apierrors.IsNotFound(err), nil
	})
	setQueueing("hm2", &gpuvcv1.Queueing{})
	waitSharedQueue(ctx, t, pool, "3 0 - owners=[hm1 hm2] namespaces=[team-hm1 team-hm2]")

	removeTeamT(ctx, t, "hm1")
	waitSharedQueue(ctx, t, pool, "2 0 - owners=[hm2] namespaces=[team-hm2]")
	removeTeamT(ctx, t, "hm2")
	waitSharedQueue(ctx, t, pool, "gone")
}

// removeTeamT deletes a Team and waits until it is gone.
func removeTeamT(ctx context.Context, t *testing.T, name string) {
	t.Helper()
	if err := c.Delete(ctx, testobj.Team(name, "").Obj()); err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	poll.Until(ctx, t, 3*time.Minute, "team "+name+" gone", func(ctx context.Context) (bool, error) {
		err := c.Get(ctx, types.NamespacedName{Name: name}, &gpuvcv1.Team{})
		return apierrors.IsNotFound(err), nil
	})
}

// restartManager stops the package's manager and starts one with pools.
func restartManager(ctx context.Context, t *testing.T, pools []string) {
	t.Helper()
	if err := mgr.Stop(); err != nil {
		t.Fatalf("stopping the manager: %v", err)
	}
	m, err := startManager(ctx, pools)
	if err != nil {
		t.Fatalf("starting the manager with usage-history pools %v: %v", pools, err)
	}
	mgr = m
}

// localQueueTarget is the ClusterQueue the team's LocalQueue points at ("" if none).
func localQueueTarget(ctx context.Context, team string) (string, error) {
	lq, err := kueueObject(ctx, "LocalQueue", gpuvcv1.HostNamespace(team), contract.KueueLocalQueueName)
	if apierrors.IsNotFound(err) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	cq, _, _ := unstructured.NestedString(lq.Object, "spec", "clusterQueue")
	return cq, nil
}

// TestPoolSwitchesToUsageHistory: a pool's teams with a ClusterQueue each move
// to the pool's shared one when the manager restarts with the pool in
// --usage-history-pool (their LocalQueues made anew: Kueue keeps
// spec.clusterQueue immutable; their own ClusterQueues deleted), and back when
// it restarts without.
func TestPoolSwitchesToUsageHistory(t *testing.T) {
	ctx := integration(t)
	pool := poolSwitched
	for _, name := range []string{"sw1", "sw2"} {
		createTeam(ctx, t, testobj.Team(name, pool).GPUs(1).Queued().Obj())
		waitActive(ctx, t, name)
	}
	expectGPUStanding(ctx, t, "sw1", 0, 0) // the status names the team's own ClusterQueue
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		_ = mgr.Stop()
		m, err := startManager(ctx, historyPools)
		if err != nil {
			t.Errorf("restarting the manager as the other tests expect it: %v", err)
			return
		}
		mgr = m
	})

	restartManager(ctx, t, append([]string{pool}, historyPools...))
	waitSharedQueue(ctx, t, pool, "2 0 - owners=[sw1 sw2] namespaces=[team-sw1 team-sw2]")
	for _, name := range []string{"sw1", "sw2"} {
		waitLocalQueueActive(ctx, t, name, teamqueue.PoolClusterQueueName(pool))
		poll.Until(ctx, t, time.Minute, "the ClusterQueue of "+name+" removed", func(ctx context.Context) (bool, error) {
			_, err := kueueObject(ctx, "ClusterQueue", "", teamqueue.ClusterQueueName(name))
			return apierrors.IsNotFound(err), nil
		})
	}

	restartManager(ctx, t, historyPools)
	for _, name := range []string{"sw1", "sw2"} {
		waitActive(ctx, t, name)
		poll.UntilSeen(ctx, t, time.Minute, "the LocalQueue of "+name+" on its own ClusterQueue", func(ctx context.Context) (bool, string, error) {
			cq, err := localQueueTarget(ctx, name)
			return cq == teamqueue.ClusterQueueName(name), cq, err
		})
	}
	waitSharedQueue(ctx, t, pool, "gone")
}
