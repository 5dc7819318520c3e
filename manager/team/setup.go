package team

import (
	"context"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	gpuvcv1 "github.com/gpuvc/gpuvc/manager/api/v1alpha1"
	"github.com/gpuvc/gpuvc/manager/teamqueue"
	"github.com/gpuvc/gpuvc/syncer/celpolicy"
)

// SetupWithManager registers the reconciler: Teams, the host objects they own (a
// change or deletion by hand wakes the Team and is repaired), and the vCluster
// control planes in team namespaces (readiness changes). Options.Workers Teams
// are reconciled at once: every step reads and writes only its own Team's
// objects (shared ones, a pool's Kueue ResourceFlavors, are applied whole and
// identically by each of its teams), and the vCluster client is safe for
// concurrent use.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	b := ctrl.NewControllerManagedBy(mgr)
	// Kueue objects of queueing teams, if Kueue is installed now (installed later:
	// they are still applied on every reconcile, only drift waits for the next one).
	for _, gvk := range []schema.GroupVersionKind{teamqueue.ClusterQueueKind, teamqueue.LocalQueueKind} {
		if _, err := mgr.GetRESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version); err == nil {
			r.kueueAtStart = true
			obj := &metav1.PartialObjectMetadata{}
			obj.SetGroupVersionKind(gvk)
			b = b.Owns(obj, builder.OnlyMetadata)
		}
	}
	return b.
		WithOptions(controller.Options{MaxConcurrentReconciles: r.opts.Workers}).
		For(&gpuvcv1.Team{}).
		Owns(&corev1.Namespace{}).
		Owns(&corev1.ResourceQuota{}).
		Owns(&corev1.LimitRange{}).
		Owns(&networkingv1.NetworkPolicy{}).
		Owns(&rbacv1.Role{}).
		Owns(&rbacv1.RoleBinding{}).
		Owns(&corev1.Secret{}).
		// vCluster runs its control plane as a StatefulSet, or a Deployment when its
		// datastore is ephemeral.
		Watches(&appsv1.StatefulSet{}, handler.EnqueueRequestsFromMapFunc(teamOfNamespace)).
		Watches(&appsv1.Deployment{}, handler.EnqueueRequestsFromMapFunc(teamOfNamespace)).
		// The CEL policy's parameters: a deleted or edited one is put back. Metadata
		// only, and only that name, so no ConfigMap content is cached.
		WatchesMetadata(&corev1.ConfigMap{}, handler.EnqueueRequestsFromMapFunc(teamOfNamespace),
			builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool { return o.GetName() == celpolicy.ParamsName }))).
		Complete(r)
}

// teamOfNamespace maps an object in a team namespace (team-<name>) to its Team.
func teamOfNamespace(_ context.Context, obj client.Object) []reconcile.Request {
	name, ok := strings.CutPrefix(obj.GetNamespace(), gpuvcv1.HostNamespace(""))
	if !ok || name == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: name}}}
}
