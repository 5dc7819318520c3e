package team

import (
	"context"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/gpuvc/gpuvc/api/contract"
	gpuvcv1 "github.com/gpuvc/gpuvc/api/v1alpha1"
	"github.com/gpuvc/gpuvc/manager/teamqueue"
	"github.com/gpuvc/gpuvc/syncer/celpolicy"
)

// SetupWithManager registers the reconciler: Teams, the host objects they own (a
// change or deletion by hand wakes the Team and is repaired), the vCluster
// control planes in team namespaces (readiness changes), and vCluster's copies
// of the teams' NetworkPolicies (gpuvc's allowance follows them).
// Options.Workers Teams are reconciled at once: every step reads and writes
// only its own Team's objects (shared ones, a pool's Kueue ResourceFlavors, are
// applied whole and identically by each of its teams), and the vCluster client
// is safe for concurrent use.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	b := ctrl.NewControllerManagedBy(mgr)
	// Kueue objects of queueing teams, if Kueue is installed now (installed later:
	// they are still applied on every reconcile, only drift waits for the next one).
	// A ClusterQueue's change (its status too) wakes every queueing team of its
	// pool: what one team borrows is what the others lend.
	if _, err := mgr.GetRESTMapper().RESTMapping(teamqueue.ClusterQueueKind.GroupKind(), teamqueue.ClusterQueueKind.Version); err == nil {
		r.kueueAtStart = true
		obj := &metav1.PartialObjectMetadata{}
		obj.SetGroupVersionKind(teamqueue.ClusterQueueKind)
		b = b.WatchesMetadata(obj, handler.EnqueueRequestsFromMapFunc(poolTeams(mgr.GetClient())))
	}
	if _, err := mgr.GetRESTMapper().RESTMapping(teamqueue.LocalQueueKind.GroupKind(), teamqueue.LocalQueueKind.Version); err == nil {
		obj := &metav1.PartialObjectMetadata{}
		obj.SetGroupVersionKind(teamqueue.LocalQueueKind)
		b = b.Owns(obj, builder.OnlyMetadata)
	}
	return b.
		WithOptions(controller.Options{MaxConcurrentReconciles: r.opts.Workers}).
		For(&gpuvcv1.Team{}, builder.WithPredicates(teamChanged)).
		Owns(&corev1.Namespace{}).
		Owns(&corev1.ResourceQuota{}, builder.WithPredicates(quotaMatters)).
		Owns(&corev1.LimitRange{}).
		Owns(&networkingv1.NetworkPolicy{}).
		Owns(&rbacv1.Role{}).
		Owns(&rbacv1.RoleBinding{}).
		Owns(&corev1.Secret{}).
		// vCluster runs its control plane as a StatefulSet, or a Deployment when its
		// datastore is ephemeral.
		Watches(&appsv1.StatefulSet{}, handler.EnqueueRequestsFromMapFunc(teamOfNamespace)).
		Watches(&appsv1.Deployment{}, handler.EnqueueRequestsFromMapFunc(teamOfNamespace)).
		// vCluster's copies of the team's NetworkPolicies: gpuvc's same-namespace
		// allowance selects the pods they do not (network_team.go). The informer
		// is Owns' own: every NetworkPolicy is cached anyway.
		Watches(&networkingv1.NetworkPolicy{}, handler.EnqueueRequestsFromMapFunc(teamOfNamespace),
			builder.WithPredicates(syncedByVCluster)).
		// The CEL policy's parameters: a deleted or edited one is put back. Metadata
		// only, and only that name, so no ConfigMap content is cached.
		WatchesMetadata(&corev1.ConfigMap{}, handler.EnqueueRequestsFromMapFunc(teamOfNamespace),
			builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool { return o.GetName() == celpolicy.ParamsName }))).
		Complete(r)
}

// syncedByVCluster passes objects that carry vCluster's marker, before or
// after the change.
var syncedByVCluster = predicate.Funcs{
	CreateFunc: func(e event.CreateEvent) bool { return hasVClusterMarker(e.Object) },
	UpdateFunc: func(e event.UpdateEvent) bool {
		return hasVClusterMarker(e.ObjectOld) || hasVClusterMarker(e.ObjectNew)
	},
	DeleteFunc:  func(e event.DeleteEvent) bool { return hasVClusterMarker(e.Object) },
	GenericFunc: func(e event.GenericEvent) bool { return hasVClusterMarker(e.Object) },
}

func hasVClusterMarker(o client.Object) bool {
	_, ok := o.GetLabels()[contract.LabelVClusterManagedBy]
	return ok
}

// poolTeams maps a team's ClusterQueue to the queueing teams of its pool, the
// team itself included (also when it is gone: its reconcile cleans up), and a
// usage-history pool's shared ClusterQueue (labelled with its pool, not a team)
// to the pool's queueing teams.
func poolTeams(c client.Reader) handler.MapFunc {
	return func(ctx context.Context, obj client.Object) []reconcile.Request {
		name, pool := obj.GetLabels()[contract.LabelTeam], obj.GetLabels()[contract.LabelPool]
		var reqs []reconcile.Request
		if name != "" {
			reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Name: name}})
			owner := &gpuvcv1.Team{}
			if err := c.Get(ctx, types.NamespacedName{Name: name}, owner); err != nil {
				return reqs
			}
			pool = owner.Spec.Pool
		} else if pool == "" {
			return nil
		}
		teams := &gpuvcv1.TeamList{}
		if err := c.List(ctx, teams); err != nil {
			return reqs
		}
		for _, t := range teams.Items {
			if t.Name != name && t.Spec.Pool == pool && t.Spec.Queueing != nil {
				reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Name: t.Name}})
			}
		}
		return reqs
	}
}

// teamOfNamespace maps an object in a team namespace (team-<name>) to its Team.
func teamOfNamespace(_ context.Context, obj client.Object) []reconcile.Request {
	name, ok := strings.CutPrefix(obj.GetNamespace(), gpuvcv1.HostNamespace(""))
	if !ok || name == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: name}}}
}
