package teamqueue

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/gpuvc/gpuvc/api/contract"
	gpuvcv1 "github.com/gpuvc/gpuvc/api/v1alpha1"
	"github.com/gpuvc/gpuvc/gpu/mig"
)

// ClusterQueueName is the team's ClusterQueue (cluster-scoped).
func ClusterQueueName(team string) string { return "gpuvc-" + team }

// CohortName is the cohort of a pool's teams: they lend to and borrow from each other.
func CohortName(pool string) string { return "gpuvc-" + pool }

// FlavorName is the ResourceFlavor of a pool's whole GPUs (profile "") or of one
// MIG profile ("+me" becomes "-me": flavor names are DNS subdomains).
func FlavorName(pool, profile string) string {
	if profile == "" {
		return "gpuvc-" + pool + "-gpu"
	}
	return "gpuvc-" + pool + "-mig-" + strings.ReplaceAll(profile, "+", "-")
}

// unbounded is the nominal quota of CPU, memory and ephemeral storage: Kueue
// admits a pod only if its ClusterQueue covers every resource it requests, but
// gpuvc queues GPUs only; the namespace's ResourceQuota bounds the rest.
var unbounded = map[corev1.ResourceName]resource.Quantity{
	corev1.ResourceCPU:              resource.MustParse("1M"),
	corev1.ResourceMemory:           resource.MustParse("1Ei"),
	corev1.ResourceEphemeralStorage: resource.MustParse("1Ei"),
}

// Objects are the Kueue objects of one queueing team.
type Objects struct {
	Flavors      []*unstructured.Unstructured // shared by the pool's teams
	ClusterQueue *unstructured.Unstructured
	LocalQueue   *unstructured.Unstructured
	// SharedClusterQueue: ClusterQueue is the pool's, shared by its queueing
	// teams (a usage-history pool, DesiredShared); otherwise it is the team's own.
	SharedClusterQueue bool
}

// Desired returns the Kueue objects t needs; nil when t does not queue.
func Desired(t *gpuvcv1.Team) (*Objects, error) {
	if t.Spec.Queueing == nil {
		return nil, nil
	}
	s := &t.Spec
	pool := s.Pool
	migQuotas := make(map[string]resourceQuota, len(s.Quota.MIG))
	for p, n := range s.Quota.MIG {
		migQuotas[p] = gpuQuota(mig.ResourceName(p), n, s.BorrowableMIG(p), lending(s, p))
	}
	groups, flavors := resourceGroups(pool, gpuQuota(contract.ResourceGPU, s.GuaranteedGPUs(), s.BorrowableGPUs(), lending(s, "")), migQuotas)

	ns := gpuvcv1.HostNamespace(t.Name)
	cq, err := object(ClusterQueueKind, ClusterQueueName(t.Name), "", &clusterQueueSpec{
		CohortName:        CohortName(pool),
		NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: ns}},
		// A pod that does not fit waits without holding up smaller ones behind it.
		QueueingStrategy: "BestEffortFIFO",
		ResourceGroups:   groups,
		Preemption: preemption{
			// A team takes its guarantee back from borrowers, whatever their priority.
			ReclaimWithinCohort: "Any",
			// Borrowing never preempts: borrowed capacity is what is idle.
			BorrowWithinCohort: borrowWithinCohort{Policy: "Never"},
			WithinClusterQueue: "LowerPriority",
		},
		FairSharing: fairSharing{Weight: *resource.NewQuantity(int64(s.Queueing.QueueWeight()), resource.DecimalSI)},
	})
	if err != nil {
		return nil, err
	}
	lq, err := object(LocalQueueKind, contract.KueueLocalQueueName, ns, &localQueueSpec{ClusterQueue: ClusterQueueName(t.Name)})
	if err != nil {
		return nil, err
	}
	return &Objects{Flavors: flavors, ClusterQueue: cq, LocalQueue: lq}, nil
}

// resourceGroups are a ClusterQueue's resource groups and the flavors they
// name: whole GPUs (quota whole) with the resources Kueue must cover but gpuvc
// does not queue, then one group per MIG profile (quota per profile) in name order.
func resourceGroups(pool string, whole resourceQuota, migQuotas map[string]resourceQuota) ([]resourceGroup, []*unstructured.Unstructured) {
	zero := resource.MustParse("0")
	g := resourceGroup{
		CoveredResources: []string{contract.ResourceGPU},
		Flavors:          []flavorQuotas{{Name: FlavorName(pool, ""), Resources: []resourceQuota{whole}}},
	}
	for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage} {
		g.CoveredResources = append(g.CoveredResources, string(r))
		// Neither borrowed nor lent: every team has more than it can use.
		g.Flavors[0].Resources = append(g.Flavors[0].Resources,
			resourceQuota{Name: string(r), NominalQuota: unbounded[r], BorrowingLimit: &zero, LendingLimit: &zero})
	}
	groups := []resourceGroup{g}
	flavors := []*unstructured.Unstructured{flavor(pool, "")}
	profiles := make([]string, 0, len(migQuotas))
	for p := range migQuotas {
		profiles = append(profiles, p)
	}
	sort.Strings(profiles)
	for _, p := range profiles {
		groups = append(groups, resourceGroup{
			CoveredResources: []string{mig.ResourceName(p)},
			Flavors:          []flavorQuotas{{Name: FlavorName(pool, p), Resources: []resourceQuota{migQuotas[p]}}},
		})
		flavors = append(flavors, flavor(pool, p))
	}
	return groups, flavors
}

// gpuQuota is one GPU resource's quota: nominal = guarantee, a borrowing limit
// always (absent means none: the ResourceQuota ceiling is guarantee + borrowing),
// and a lending limit only when the Team sets one (absent: lend everything).
func gpuQuota(name string, guaranteed, borrowable int32, lend *int32) resourceQuota {
	q := resourceQuota{
		Name:           name,
		NominalQuota:   *resource.NewQuantity(int64(guaranteed), resource.DecimalSI),
		BorrowingLimit: resource.NewQuantity(int64(borrowable), resource.DecimalSI),
	}
	if lend != nil {
		q.LendingLimit = resource.NewQuantity(int64(*lend), resource.DecimalSI)
	}
	return q
}

// lending is the team's lending limit of whole GPUs (profile "") or of a MIG
// profile; nil when it sets none.
func lending(s *gpuvcv1.TeamSpec, profile string) *int32 {
	l := s.Queueing.LendingLimit
	if l == nil {
		return nil
	}
	if profile == "" {
		return l.GPUs
	}
	if n, ok := l.MIG[profile]; ok {
		return &n
	}
	return nil
}

// flavor is the ResourceFlavor of a pool's whole GPUs or MIG profile: its nodes
// are the pool's.
func flavor(pool, profile string) *unstructured.Unstructured {
	u, _ := object(ResourceFlavorKind, FlavorName(pool, profile), "", &resourceFlavorSpec{
		NodeLabels: map[string]string{contract.LabelPool: pool},
	})
	return u
}

// object builds a Kueue object from a pointer to one of the mirror specs.
func object(gvk schema.GroupVersionKind, name, namespace string, spec any) (*unstructured.Unstructured, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(spec)
	if err != nil {
		return nil, fmt.Errorf("building Kueue %s %s: %w", gvk.Kind, name, err)
	}
	u := &unstructured.Unstructured{Object: map[string]any{"spec": m}}
	u.SetGroupVersionKind(gvk)
	u.SetName(name)
	u.SetNamespace(namespace)
	return u, nil
}
