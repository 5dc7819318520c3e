package idle

import (
	"k8s.io/apimachinery/pkg/api/equality"
	apimeta "k8s.io/apimachinery/pkg/api/meta"

	gpuvcv1 "github.com/gpuvc/gpuvc/api/v1alpha1"
)

// equalStatus: the Asleep condition (ignoring its timestamp, which SetStatusCondition
// keeps while the status does not change) and status.idle are the same.
func equalStatus(a, b *gpuvcv1.Team) bool {
	ca := apimeta.FindStatusCondition(a.Status.Conditions, gpuvcv1.ConditionAsleep)
	cb := apimeta.FindStatusCondition(b.Status.Conditions, gpuvcv1.ConditionAsleep)
	return equality.Semantic.DeepEqual(ca, cb) && equality.Semantic.DeepEqual(a.Status.Idle, b.Status.Idle)
}
