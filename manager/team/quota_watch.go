package team

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
)

// quotaMatters passes a change of a team's ResourceQuota the Team reconciler
// acts on: its spec, labels or owners (drift), its hard limits, or the GPU use
// the Team's status shows (gpuUsage). The quota's status changes at every pod
// created or deleted in the namespace; without this filter each one, CPU pods
// included, cost a reconcile of the Team (0.2–0.5 API requests per pod and a
// fifth of the manager's CPU in the admission benchmark).
var quotaMatters = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		old, okOld := e.ObjectOld.(*corev1.ResourceQuota)
		cur, okNew := e.ObjectNew.(*corev1.ResourceQuota)
		if !okOld || !okNew {
			return true
		}
		return !equality.Semantic.DeepEqual(old.Spec, cur.Spec) ||
			!equality.Semantic.DeepEqual(old.Labels, cur.Labels) ||
			!equality.Semantic.DeepEqual(old.OwnerReferences, cur.OwnerReferences) ||
			!old.DeletionTimestamp.Equal(cur.DeletionTimestamp) ||
			!equality.Semantic.DeepEqual(old.Status.Hard, cur.Status.Hard) ||
			!equality.Semantic.DeepEqual(gpuUsage(old), gpuUsage(cur))
	},
}
