package team

import (
	"slices"

	"k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
)

// teamChanged passes a change of a Team the reconciler acts on: its spec (a
// new generation), labels, annotations, finalizers or deletion. Not a change
// of status alone: the reconciler's own status write, the accountant's
// GPU-seconds every minute, the idle loop's conditions — each used to cost a
// full pass (about fifteen host writes and the release's readiness) for
// nothing, as the status it reads of its own is what it wrote. What the
// others' writes mean for the host reaches the reconciler through its other
// watches (the control plane's StatefulSet or Deployment scaled by the idle
// loop, the quota, Kueue's queues).
var teamChanged = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		old, cur := e.ObjectOld, e.ObjectNew
		return old.GetGeneration() != cur.GetGeneration() ||
			!equality.Semantic.DeepEqual(old.GetLabels(), cur.GetLabels()) ||
			!equality.Semantic.DeepEqual(old.GetAnnotations(), cur.GetAnnotations()) ||
			!slices.Equal(old.GetFinalizers(), cur.GetFinalizers()) ||
			!old.GetDeletionTimestamp().Equal(cur.GetDeletionTimestamp())
	},
}
