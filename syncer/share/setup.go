package share

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/gpuvc/gpuvc/api/contract"
)

// ControllerName names the controller (logs, metrics of controller-runtime).
const ControllerName = "gpuvc-share"

// SetupWithManager registers the controller. A team is reconciled when its
// namespace changes, when one of its share or reservation pods changes, when any
// of its pods goes (quota frees), when its ResourceQuota changes and when a
// node's list of unhealthy GPUs changes (every team: rare). The controller reads
// what it decides on from the API server, so the cache only has to wake it:
// pods, quotas and nodes are watched metadata-only (the manager's other pod
// readers share that one metadata informer).
func (c *Controller) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		For(&corev1.Namespace{}, builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool {
			return o.GetLabels()[contract.LabelTeam] != ""
		}))).
		WatchesMetadata(&corev1.Pod{}, c.podHandler()).
		WatchesMetadata(&corev1.ResourceQuota{}, handler.EnqueueRequestsFromMapFunc(namespaceOf)).
		WatchesMetadata(&corev1.Node{}, c.nodeHealthHandler(mgr.GetClient())).
		WithOptions(controller.Options{MaxConcurrentReconciles: c.opts.MaxConcurrentReconciles}).
		Complete(c)
}

func namespaceOf(_ context.Context, o client.Object) []reconcile.Request {
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: o.GetNamespace()}}}
}

type queue = workqueue.TypedRateLimitingInterface[reconcile.Request]

// podHandler wakes a pod's team. Every change of share and reservation pods
// matters; of other team pods only their deletion (it may free quota).
func (c *Controller) podHandler() handler.EventHandler {
	enqueue := func(o client.Object, q queue) {
		if o.GetLabels()[contract.LabelTeam] != "" {
			q.Add(reconcile.Request{NamespacedName: types.NamespacedName{Name: o.GetNamespace()}})
		}
	}
	ours := func(o client.Object) bool {
		l := o.GetLabels()
		return l[contract.LabelGPUShare] == "true" || l[contract.LabelRole] == contract.RoleReservation
	}
	return handler.Funcs{
		CreateFunc: func(_ context.Context, e event.CreateEvent, q queue) {
			if ours(e.Object) {
				c.seen(e.Object.GetNamespace(), e.Object.GetUID())
				enqueue(e.Object, q)
			}
		},
		UpdateFunc: func(_ context.Context, e event.UpdateEvent, q queue) {
			if ours(e.ObjectNew) {
				enqueue(e.ObjectNew, q)
			}
		},
		DeleteFunc: func(_ context.Context, e event.DeleteEvent, q queue) { enqueue(e.Object, q) },
	}
}

// nodeHealthHandler wakes every team when a node's unhealthy-GPU list changes:
// a team's reservations on that node must stop taking shares.
func (c *Controller) nodeHealthHandler(reader client.Reader) handler.EventHandler {
	return handler.Funcs{
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q queue) {
			key := contract.AnnotationUnhealthyGPUs
			if e.ObjectOld.GetAnnotations()[key] == e.ObjectNew.GetAnnotations()[key] {
				return
			}
			var l corev1.NamespaceList
			if err := reader.List(ctx, &l, client.HasLabels{contract.LabelTeam}); err != nil {
				ctrl.LoggerFrom(ctx).Error(err, "listing team namespaces after a GPU health change", "node", e.ObjectNew.GetName())
				return
			}
			for _, ns := range l.Items {
				q.Add(reconcile.Request{NamespacedName: types.NamespacedName{Name: ns.Name}})
			}
		},
	}
}
