package teamqueue

import (
	"sort"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/gpuvc/gpuvc/api/contract"
	gpuvcv1 "github.com/gpuvc/gpuvc/api/v1alpha1"
	"github.com/gpuvc/gpuvc/gpu/mig"
)

// Standing is what a team's queue status is read from.
type Standing struct {
	// ClusterQueue is the team's.
	ClusterQueue *unstructured.Unstructured
	// Cohort are the ClusterQueues of its pool's cohort, its own included; lent
	// GPUs are read from them.
	Cohort []*unstructured.Unstructured
	// Workloads are Kueue's Workloads in the team's namespace; the waiting ones
	// count as queued.
	Workloads []*unstructured.Unstructured
	// LocalQueue is the team's, set in a usage-history pool: ClusterQueue is
	// then the pool's shared one, and the team's own standing is its
	// LocalQueue's.
	LocalQueue *unstructured.Unstructured
}

// Status reads a team's standing: per GPU kind what it is guaranteed, uses,
// borrows, lends and has waiting, and its pods admitted and waiting.
func Status(t *gpuvcv1.Team, in Standing) *gpuvcv1.QueueStatus {
	cq := in.ClusterQueue
	s := &gpuvcv1.QueueStatus{
		ClusterQueue:       cq.GetName(),
		GuaranteedGPUs:     int64(t.Spec.GuaranteedGPUs()),
		BorrowingLimitGPUs: int64(t.Spec.BorrowableGPUs()),
	}
	own := cq
	if in.LocalQueue != nil {
		own = in.LocalQueue
	}
	pending, _, _ := unstructured.NestedInt64(own.Object, "status", "pendingWorkloads")
	admitted, _, _ := unstructured.NestedInt64(own.Object, "status", "admittedWorkloads")
	s.QueuedPods, s.AdmittedPods = int32(pending), int32(admitted)
	if in.LocalQueue == nil {
		s.WeightedShare, _, _ = unstructured.NestedInt64(cq.Object, "status", "fairSharing", "weightedShare")
	}

	queued := queuedRequests(in.Workloads)
	for _, k := range gpuKinds(t) {
		f := gpuvcv1.QueueFlavorStatus{
			Flavor: k.flavor, Resource: k.resource,
			Guaranteed: k.guaranteed, BorrowingLimit: k.borrowable,
			Queued: queued[k.resource],
		}
		if in.LocalQueue != nil {
			// A shared ClusterQueue lends nothing; what the team uses beyond
			// its guarantee is its share of the others' idle guarantees.
			f.Used = usageOf(in.LocalQueue, k.flavor, k.resource).total
			f.Borrowed = max(0, f.Used-f.Guaranteed)
		} else {
			u := usageOf(cq, k.flavor, k.resource)
			f.Used, f.Borrowed = u.total, u.borrowed
			f.Lent = lent(cq.GetName(), in.Cohort, k.flavor, k.resource)
		}
		s.Flavors = append(s.Flavors, f)
		if k.resource == contract.ResourceGPU {
			s.UsedGPUs, s.BorrowedGPUs = f.Used, f.Borrowed
		}
	}
	return s
}

// gpuKind is one GPU resource of a team's ClusterQueue.
type gpuKind struct {
	flavor, resource       string
	guaranteed, borrowable int64
}

// gpuKinds are the team's GPU kinds, as Desired writes them: whole GPUs, then
// the MIG profiles of spec.quota.mig in name order.
func gpuKinds(t *gpuvcv1.Team) []gpuKind {
	s := &t.Spec
	kinds := []gpuKind{{FlavorName(s.Pool, ""), contract.ResourceGPU, int64(s.GuaranteedGPUs()), int64(s.BorrowableGPUs())}}
	profiles := make([]string, 0, len(s.Quota.MIG))
	for p := range s.Quota.MIG {
		profiles = append(profiles, p)
	}
	sort.Strings(profiles)
	for _, p := range profiles {
		kinds = append(kinds, gpuKind{FlavorName(s.Pool, p), mig.ResourceName(p), int64(s.Quota.MIG[p]), int64(s.BorrowableMIG(p))})
	}
	return kinds
}
