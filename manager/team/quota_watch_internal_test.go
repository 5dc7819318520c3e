package team

import (
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"
)

// A CPU pod's create changes the quota's status but nothing the Team shows or
// enforces: no reconcile. A GPU pod, a spec edit or a label edit: a reconcile.
func TestQuotaMattersOnlyForWhatTheTeamReads(t *testing.T) {
	base := &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: QuotaName, Namespace: "team-a", Labels: map[string]string{"gpuvc.dev/team": "a"}},
		Spec:       corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{"requests.nvidia.com/gpu": resource.MustParse("4")}},
		Status: corev1.ResourceQuotaStatus{
			Hard: corev1.ResourceList{"requests.nvidia.com/gpu": resource.MustParse("4")},
			Used: corev1.ResourceList{"requests.nvidia.com/gpu": resource.MustParse("1"), "requests.cpu": resource.MustParse("1"), "pods": resource.MustParse("2")},
		},
	}
	changed := func(edit func(q *corev1.ResourceQuota)) bool {
		cur := base.DeepCopy()
		edit(cur)
		return quotaMatters.Update(event.UpdateEvent{ObjectOld: base, ObjectNew: cur})
	}
	require.False(t, changed(func(q *corev1.ResourceQuota) {
		q.Status.Used["requests.cpu"] = resource.MustParse("2")
		q.Status.Used["pods"] = resource.MustParse("3")
		q.ResourceVersion = "2"
	}), "a CPU pod created")
	require.True(t, changed(func(q *corev1.ResourceQuota) { q.Status.Used["requests.nvidia.com/gpu"] = resource.MustParse("2") }), "a GPU pod created")
	require.True(t, changed(func(q *corev1.ResourceQuota) {
		q.Status.Used["requests.nvidia.com/mig-1g.10gb"] = resource.MustParse("1")
	}), "a MIG pod created")
	require.True(t, changed(func(q *corev1.ResourceQuota) { q.Spec.Hard["requests.nvidia.com/gpu"] = resource.MustParse("8") }), "the spec edited")
	require.True(t, changed(func(q *corev1.ResourceQuota) { q.Labels = nil }), "gpuvc's labels removed")
	require.True(t, changed(func(q *corev1.ResourceQuota) { q.Status.Hard["requests.nvidia.com/gpu"] = resource.MustParse("8") }), "the hard limits the status reports")
	require.True(t, quotaMatters.Create(event.CreateEvent{Object: base}))
	require.True(t, quotaMatters.Delete(event.DeleteEvent{Object: base}))
}
