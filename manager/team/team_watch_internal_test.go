package team

import (
	"testing"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"

	gpuvcv1 "github.com/gpuvc/gpuvc/api/v1alpha1"
)

// A status write alone (the reconciler's own, the accountant's, the idle
// loop's) does not start a pass; a spec, metadata or deletion change does.
func TestTeamChangedIgnoresStatusAlone(t *testing.T) {
	base := &gpuvcv1.Team{ObjectMeta: metav1.ObjectMeta{Name: "a", Generation: 3, Finalizers: []string{gpuvcv1.Finalizer}}}
	changed := func(edit func(t *gpuvcv1.Team)) bool {
		cur := base.DeepCopy()
		edit(cur)
		return teamChanged.Update(event.UpdateEvent{ObjectOld: base, ObjectNew: cur})
	}
	require.False(t, changed(func(t *gpuvcv1.Team) {
		t.ResourceVersion = "9"
		t.Status.ObservedGeneration = 3
		t.Status.Conditions = []metav1.Condition{{Type: gpuvcv1.ConditionAsleep, Status: metav1.ConditionTrue}}
		t.Status.GPUSeconds = &gpuvcv1.GPUSeconds{}
	}), "status alone")
	require.True(t, changed(func(t *gpuvcv1.Team) { t.Generation = 4 }), "the spec")
	require.True(t, changed(func(t *gpuvcv1.Team) { t.Labels = map[string]string{"x": "y"} }), "labels")
	require.True(t, changed(func(t *gpuvcv1.Team) { t.Annotations = map[string]string{"x": "y"} }), "annotations")
	require.True(t, changed(func(t *gpuvcv1.Team) { t.Finalizers = nil }), "finalizers")
	require.True(t, changed(func(t *gpuvcv1.Team) { now := metav1.Now(); t.DeletionTimestamp = &now }), "deletion")
	require.True(t, teamChanged.Create(event.CreateEvent{Object: base}))
	require.True(t, teamChanged.Delete(event.DeleteEvent{Object: base}))
}
