package teamqueue

import (
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuvc/gpuvc/api/contract"
	gpuvcv1 "github.com/gpuvc/gpuvc/api/v1alpha1"
	"github.com/gpuvc/gpuvc/gpu/mig"
)

// A usage-history pool shares its GPUs by the teams' past use: Kueue's
// AdmissionFairSharing (beta and on by default since Kueue v0.15), which orders
// the waiting workloads of the LocalQueues of one ClusterQueue by each
// LocalQueue's decayed usage divided by its weight. Kueue v0.17 applies it only
// within a ClusterQueue (pkg/cache/queue/cluster_queue.go, queueOrderingFunc),
// never among the ClusterQueues of a cohort, so the pool's queueing teams share
// one ClusterQueue instead of one each (docs/queueing.md, "Fairness with memory").

// AdmissionFairSharingMode is the ClusterQueue admission mode of a
// usage-history pool (Kueue's UsageBasedAdmissionFairSharing).
const AdmissionFairSharingMode = "UsageBasedAdmissionFairSharing"

// PoolClusterQueueName is the ClusterQueue a usage-history pool's teams share.
// The dot keeps it apart from every team's own (team names are DNS labels).
func PoolClusterQueueName(pool string) string { return "gpuvc-pool." + pool }

// DesiredShared returns the Kueue objects of t in a usage-history pool: the
// pool's flavors, the pool's shared ClusterQueue built from members (the pool's
// queueing teams; t's spec as given, whether or not members lists it) and t's
// LocalQueue pointing at it with t's weight. LocalQueue is nil when t does not
// queue (the ClusterQueue is then the remaining members'); nil Objects when no
// team of the pool queues.
//
// The shared ClusterQueue's nominal quota per GPU kind is the sum of the
// members' guarantees (spec.quota); nothing is borrowed, lent or preempted:
// who goes next when a GPU frees up is Kueue's order by usage history.
func DesiredShared(t *gpuvcv1.Team, members []gpuvcv1.Team) (*Objects, error) {
	pool := t.Spec.Pool
	teams := make([]*gpuvcv1.Team, 0, len(members)+1)
	for i := range members {
		if m := &members[i]; m.Name != t.Name && m.Spec.Pool == pool && m.Spec.Queueing != nil && m.DeletionTimestamp == nil {
			teams = append(teams, m)
		}
	}
	if t.Spec.Queueing != nil {
		if w := t.Spec.Queueing.QueueWeight(); w < 1 {
			return nil, fmt.Errorf("spec.queueing.weight: %d in pool %s, which shares its GPUs by usage history (gpuvc manager --usage-history-pool): Kueue divides a team's past use by its weight, so it must be at least 1 there (limit: 1–%d); set a weight of 1 or more",
				w, pool, gpuvcv1.MaxQueueWeight)
		}
		teams = append(teams, t)
	}
	if len(teams) == 0 {
		return nil, nil
	}
	sort.Slice(teams, func(i, j int) bool { return teams[i].Name < teams[j].Name })

	var gpus int64
	migTotals := map[string]int64{}
	namespaces := make([]string, 0, len(teams))
	for _, m := range teams {
		gpus += int64(m.Spec.GuaranteedGPUs())
		for p, n := range m.Spec.Quota.MIG {
			migTotals[p] += int64(n)
		}
		namespaces = append(namespaces, gpuvcv1.HostNamespace(m.Name))
	}
	migQuotas := make(map[string]resourceQuota, len(migTotals))
	for p, n := range migTotals {
		migQuotas[p] = sharedQuota(mig.ResourceName(p), n)
	}
	groups, flavors := resourceGroups(pool, sharedQuota(contract.ResourceGPU, gpus), migQuotas)
	cq, err := object(ClusterQueueKind, PoolClusterQueueName(pool), "", &clusterQueueSpec{
		// Alone in the pool's cohort (no team of the pool has a ClusterQueue of
		// its own); Kueue allows borrowing and lending limits only in a cohort.
		CohortName: CohortName(pool),
		NamespaceSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
			Key: corev1.LabelMetadataName, Operator: metav1.LabelSelectorOpIn, Values: namespaces,
		}}},
		QueueingStrategy: "BestEffortFIFO",
		ResourceGroups:   groups,
		// No preemption at all: within one ClusterQueue a higher priority would
		// let one team stop another's pods; the history decides who goes next.
		Preemption: preemption{
			ReclaimWithinCohort: "Never",
			BorrowWithinCohort:  borrowWithinCohort{Policy: "Never"},
			WithinClusterQueue:  "Never",
		},
		FairSharing:    fairSharing{Weight: *resource.NewQuantity(1, resource.DecimalSI)},
		AdmissionScope: &admissionScope{AdmissionMode: AdmissionFairSharingMode},
	})
	if err != nil {
		return nil, err
	}
	objs := &Objects{Flavors: flavors, ClusterQueue: cq, SharedClusterQueue: true}
	if t.Spec.Queueing != nil {
		weight := fairSharing{Weight: *resource.NewQuantity(int64(t.Spec.Queueing.QueueWeight()), resource.DecimalSI)}
		if objs.LocalQueue, err = object(LocalQueueKind, contract.KueueLocalQueueName, gpuvcv1.HostNamespace(t.Name),
			&localQueueSpec{ClusterQueue: PoolClusterQueueName(pool), FairSharing: &weight}); err != nil {
			return nil, err
		}
	}
	return objs, nil
}

// sharedQuota is a shared ClusterQueue's quota of one GPU resource: the sum of
// its teams' guarantees, nothing borrowed (its cohort has no one else).
func sharedQuota(name string, n int64) resourceQuota {
	zero := resource.MustParse("0")
	return resourceQuota{Name: name, NominalQuota: *resource.NewQuantity(n, resource.DecimalSI), BorrowingLimit: &zero}
}
