package teamqueue_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/gpuvc/gpuvc/api/contract"
	gpuvcv1 "github.com/gpuvc/gpuvc/api/v1alpha1"
	"github.com/gpuvc/gpuvc/e2e/testsupport/poll"
	"github.com/gpuvc/gpuvc/e2e/testsupport/testobj"
	"github.com/gpuvc/gpuvc/manager/teamqueue"
)

// The usage-history pools of the package's manager (historyPools).
const (
	poolHistoryTest  = "hist"
	poolHistoryBench = "fairh"
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
