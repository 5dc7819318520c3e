package team

import (
	"context"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpuvc/gpuvc/api/contract"
	gpuvcv1 "github.com/gpuvc/gpuvc/api/v1alpha1"
	"github.com/gpuvc/gpuvc/manager/teamqueue"
)

// historyPool says whether pool shares its GPUs by usage history
// (Options.UsageHistoryPools): its queueing teams share one ClusterQueue.
func (r *Reconciler) historyPool(pool string) bool {
	return slices.Contains(r.opts.UsageHistoryPools, pool)
}

// ensureSharedQueue is ensureQueue in a usage-history pool: the pool's shared
// ClusterQueue, rebuilt from the pool's queueing teams on every reconcile of
// any of them (each applies the same object), and the team's LocalQueue with
// its weight. A team that stops queueing loses its LocalQueue and leaves the
// ClusterQueue to the others; the last one out deletes it. Every member owns
// the ClusterQueue (not as controller): when a Team is gone the garbage
// collector drops its reference, and that change wakes the others.
func (r *Reconciler) ensureSharedQueue(ctx context.Context, t *gpuvcv1.Team) error {
	pool := t.Spec.Pool
	if t.Spec.Queueing == nil && t.Status.Queue == nil {
		return nil // never queued, or already out
	}
	teams := &gpuvcv1.TeamList{}
	if err := r.client.List(ctx, teams); err != nil {
		return err
	}
	objs, err := teamqueue.DesiredShared(t, teams.Items)
	if err != nil {
		return err
	}
	// The team's own ClusterQueue from before its pool shared one goes, and so
	// does a LocalQueue pointing elsewhere (Kueue keeps spec.clusterQueue
	// immutable) or of a team that stopped queueing.
	if err := r.deleteKueueIfExists(ctx, "ClusterQueue", teamqueue.ClusterQueueName(t.Name), ""); err != nil {
		return err
	}
	target := ""
	if objs != nil && objs.LocalQueue != nil {
		target = teamqueue.PoolClusterQueueName(pool)
	}
	if err := r.dropLocalQueueUnless(ctx, t, target); err != nil {
		return err
	}
	if objs == nil {
		return r.deleteKueue(ctx, "ClusterQueue", teamqueue.PoolClusterQueueName(pool), "")
	}
	for _, f := range objs.Flavors {
		f.SetLabels(map[string]string{LabelManagedBy: managedBy, contract.LabelPool: pool})
		if err := r.applyKueue(ctx, f); err != nil {
			return err
		}
	}
	// t as given, not the cache's copy, which may lag.
	members := []gpuvcv1.Team{*t}
	for _, m := range teams.Items {
		if m.Name != t.Name {
			members = append(members, m)
		}
	}
	var owners []metav1.OwnerReference
	for _, m := range members {
		if m.Spec.Pool == pool && m.Spec.Queueing != nil && m.DeletionTimestamp == nil {
			owners = append(owners, metav1.OwnerReference{APIVersion: gpuvcv1.GroupVersion.String(), Kind: "Team", Name: m.Name, UID: m.UID})
		}
	}
	// In name order, as the selector: every member applies the same object, so
	// a reconcile that changes nothing writes nothing (and wakes no one).
	slices.SortFunc(owners, func(a, b metav1.OwnerReference) int { return strings.Compare(a.Name, b.Name) })
	cq := objs.ClusterQueue
	cq.SetLabels(map[string]string{LabelManagedBy: managedBy, contract.LabelPool: pool})
	cq.SetOwnerReferences(owners)
	if err := r.applyKueue(ctx, cq); err != nil {
		return err
	}
	if objs.LocalQueue == nil {
		return nil
	}
	lq := objs.LocalQueue
	lq.SetLabels(teamLabels(t))
	lq.SetOwnerReferences([]metav1.OwnerReference{{
		APIVersion: gpuvcv1.GroupVersion.String(), Kind: "Team", Name: t.Name, UID: t.UID, Controller: new(true),
	}})
	return r.applyKueue(ctx, lq)
}

// dropLocalQueueUnless deletes the team's LocalQueue unless it points at
// clusterQueue ("": in any case). Read from the cache: no request when there is
// nothing to do.
func (r *Reconciler) dropLocalQueueUnless(ctx context.Context, t *gpuvcv1.Team, clusterQueue string) error {
	lq := &unstructured.Unstructured{}
	lq.SetGroupVersionKind(teamqueue.LocalQueueKind)
	err := r.client.Get(ctx, client.ObjectKey{Namespace: gpuvcv1.HostNamespace(t.Name), Name: contract.KueueLocalQueueName}, lq)
	if apierrors.IsNotFound(err) || apimeta.IsNoMatchError(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if cq, _, _ := unstructured.NestedString(lq.Object, "spec", "clusterQueue"); clusterQueue != "" && cq == clusterQueue {
		return nil
	}
	// Only the object the cache showed: one made anew since has another UID.
	uid := lq.GetUID()
	err = r.client.Delete(ctx, lq, client.Preconditions{UID: &uid})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil
	}
	return err
}

// deleteKueueIfExists deletes a Kueue object the cache has.
func (r *Reconciler) deleteKueueIfExists(ctx context.Context, kind, name, namespace string) error {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(teamqueue.GroupVersion.WithKind(kind))
	err := r.client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, u)
	if apierrors.IsNotFound(err) || apimeta.IsNoMatchError(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if u.GetDeletionTimestamp() != nil {
		return nil // Kueue's finalizer holds it while its admitted pods run
	}
	return r.deleteKueue(ctx, kind, name, namespace)
}

// deleteKueue deletes a Kueue object if it exists.
func (r *Reconciler) deleteKueue(ctx context.Context, kind, name, namespace string) error {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(teamqueue.GroupVersion.WithKind(kind))
	u.SetName(name)
	u.SetNamespace(namespace)
	if err := r.client.Delete(ctx, u); err != nil && !apierrors.IsNotFound(err) && !apimeta.IsNoMatchError(err) {
		return err
	}
	return nil
}

// recordSharedQueue is recordQueue in a usage-history pool: the team's standing
// is its LocalQueue's (used, pods admitted and waiting), the ClusterQueue the
// pool's.
func (r *Reconciler) recordSharedQueue(ctx context.Context, t *gpuvcv1.Team) (teamqueue.Standing, error) {
	cq := &unstructured.Unstructured{}
	cq.SetGroupVersionKind(teamqueue.ClusterQueueKind)
	if err := r.client.Get(ctx, client.ObjectKey{Name: teamqueue.PoolClusterQueueName(t.Spec.Pool)}, cq); err != nil {
		return teamqueue.Standing{}, err
	}
	lq := &unstructured.Unstructured{}
	lq.SetGroupVersionKind(teamqueue.LocalQueueKind)
	if err := r.client.Get(ctx, client.ObjectKey{Namespace: gpuvcv1.HostNamespace(t.Name), Name: contract.KueueLocalQueueName}, lq); err != nil {
		return teamqueue.Standing{}, err
	}
	return teamqueue.Standing{ClusterQueue: cq, Cohort: []*unstructured.Unstructured{cq}, LocalQueue: lq}, nil
}
