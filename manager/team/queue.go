package team

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/gpuvc/gpuvc/api/contract"
	gpuvcv1 "github.com/gpuvc/gpuvc/api/v1alpha1"
	"github.com/gpuvc/gpuvc/manager/teamqueue"
)

// ensureQueue gives a queueing team (spec.queueing) its Kueue objects, repairing
// drift, and removes the team's ClusterQueue and LocalQueue when it stops
// queueing. ResourceFlavors are shared by a pool's teams and stay.
func (r *Reconciler) ensureQueue(ctx context.Context, t *gpuvcv1.Team) error {
	if r.historyPool(t.Spec.Pool) {
		return r.ensureSharedQueue(ctx, t)
	}
	// A LocalQueue pointing at the pool's shared ClusterQueue, from when the
	// pool shared one, goes (spec.clusterQueue is immutable); so does the shared
	// ClusterQueue.
	if t.Spec.Queueing != nil {
		if err := r.dropLocalQueueUnless(ctx, t, teamqueue.ClusterQueueName(t.Name)); err != nil {
			return err
		}
		if err := r.deleteKueueIfExists(ctx, "ClusterQueue", teamqueue.PoolClusterQueueName(t.Spec.Pool), ""); err != nil {
			return err
		}
	}
	objs, err := teamqueue.Desired(t)
	if err != nil {
		return err
	}
	if objs == nil {
		return r.removeQueue(ctx, t)
	}
	owner := metav1.OwnerReference{
		APIVersion: gpuvcv1.GroupVersion.String(), Kind: "Team", Name: t.Name, UID: t.UID,
		Controller: new(true),
	}
	for _, f := range objs.Flavors {
		f.SetLabels(map[string]string{LabelManagedBy: managedBy, contract.LabelPool: t.Spec.Pool})
		if err := r.applyKueue(ctx, f); err != nil {
			return err
		}
	}
	for _, o := range []*unstructured.Unstructured{objs.ClusterQueue, objs.LocalQueue} {
		o.SetLabels(teamLabels(t))
		o.SetOwnerReferences([]metav1.OwnerReference{owner})
		if err := r.applyKueue(ctx, o); err != nil {
			return err
		}
	}
	return nil
}

// applyKueue applies a Kueue object, explaining a cluster without Kueue.
func (r *Reconciler) applyKueue(ctx context.Context, u *unstructured.Unstructured) error {
	err := r.client.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(FieldOwner), client.ForceOwnership)
	if apimeta.IsNoMatchError(err) {
		return fmt.Errorf("spec.queueing needs Kueue, and this cluster serves no %s %s: install Kueue %s or later (gpuvc is tested with %s), or remove spec.queueing",
			u.GroupVersionKind().GroupVersion(), u.GetKind(), teamqueue.MinKueueVersion, teamqueue.TestedKueueVersion)
	}
	if err != nil {
		return fmt.Errorf("applying Kueue %s %s: %w", u.GetKind(), u.GetName(), err)
	}
	return nil
}

// removeQueue deletes the team's ClusterQueue and LocalQueue if they exist. It
// looks only if Kueue was installed when the manager started or the team has
// queued (its status says so): Kueue installed later, and a team that stopped
// queueing before its status was written, keep their queues until the Team is
// deleted (they are owned by it).
func (r *Reconciler) removeQueue(ctx context.Context, t *gpuvcv1.Team) error {
	if !r.kueueAtStart && t.Status.Queue == nil {
		return nil
	}
	for _, o := range []struct {
		kind     string
		name, ns string
	}{{"ClusterQueue", teamqueue.ClusterQueueName(t.Name), ""}, {"LocalQueue", contract.KueueLocalQueueName, gpuvcv1.HostNamespace(t.Name)}} {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(teamqueue.GroupVersion.WithKind(o.kind))
		u.SetName(o.name)
		u.SetNamespace(o.ns)
		err := r.client.Delete(ctx, u)
		if err != nil && !apierrors.IsNotFound(err) && !apimeta.IsNoMatchError(err) && !errors.Is(err, context.Canceled) {
			return fmt.Errorf("removing Kueue %s %s: %w", o.kind, o.name, err)
		}
	}
	return nil
}

// recordQueue copies the team's standing in Kueue into the status (nil without
// spec.queueing): its ClusterQueue's, the lent GPUs from its cohort's
// ClusterQueues, the queued ones from its waiting Workloads. An unreadable
// ClusterQueue leaves the last standing.
func (r *Reconciler) recordQueue(ctx context.Context, t *gpuvcv1.Team) {
	if t.Spec.Queueing == nil {
		t.Status.Queue = nil
		return
	}
	logger := log.FromContext(ctx)
	if r.historyPool(t.Spec.Pool) {
		in, err := r.recordSharedQueue(ctx, t)
		if err != nil {
			logger.V(1).Info("reading the pool's shared ClusterQueue and the team's LocalQueue", "err", err)
			return
		}
		in.Workloads = r.teamWorkloads(ctx, t)
		t.Status.Queue = teamqueue.Status(t, in)
		return
	}
	cq := &unstructured.Unstructured{}
	cq.SetGroupVersionKind(teamqueue.ClusterQueueKind)
	if err := r.client.Get(ctx, client.ObjectKey{Name: teamqueue.ClusterQueueName(t.Name)}, cq); err != nil {
		logger.V(1).Info("reading the team's ClusterQueue", "err", err)
		return
	}
	in := teamqueue.Standing{ClusterQueue: cq, Cohort: []*unstructured.Unstructured{cq}}
	cqs := &unstructured.UnstructuredList{}
	cqs.SetGroupVersionKind(teamqueue.ClusterQueueKind.GroupVersion().WithKind("ClusterQueueList"))
	if err := r.client.List(ctx, cqs, client.MatchingLabels{LabelManagedBy: managedBy}); err != nil {
		logger.V(1).Info("listing the cohort's ClusterQueues", "err", err)
	}
	cohort := teamqueue.CohortName(t.Spec.Pool)
	for i := range cqs.Items {
		o := &cqs.Items[i]
		if c, _, _ := unstructured.NestedString(o.Object, "spec", "cohortName"); c == cohort && o.GetName() != cq.GetName() {
			in.Cohort = append(in.Cohort, o)
		}
	}
	in.Workloads = r.teamWorkloads(ctx, t)
	t.Status.Queue = teamqueue.Status(t, in)
}

// teamWorkloads are Kueue's Workloads in the team's namespace.
func (r *Reconciler) teamWorkloads(ctx context.Context, t *gpuvcv1.Team) []*unstructured.Unstructured {
	wls := &unstructured.UnstructuredList{}
	wls.SetGroupVersionKind(teamqueue.GroupVersion.WithKind("WorkloadList"))
	if err := r.client.List(ctx, wls, client.InNamespace(gpuvcv1.HostNamespace(t.Name))); err != nil {
		log.FromContext(ctx).V(1).Info("listing the team's Workloads", "err", err)
	}
	out := make([]*unstructured.Unstructured, 0, len(wls.Items))
	for i := range wls.Items {
		out = append(out, &wls.Items[i])
	}
	return out
}
