package teamqueue

import (
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/gpuvc/gpuvc/manager/api/contract"
	gpuvcv1 "github.com/gpuvc/gpuvc/manager/api/v1alpha1"
)

// Status reads a team's standing from its ClusterQueue's status (whole GPUs).
func Status(t *gpuvcv1.Team, cq *unstructured.Unstructured) *gpuvcv1.QueueStatus {
	s := &gpuvcv1.QueueStatus{
		ClusterQueue:       cq.GetName(),
		GuaranteedGPUs:     int64(t.Spec.GuaranteedGPUs()),
		BorrowingLimitGPUs: int64(t.Spec.BorrowableGPUs()),
	}
	pending, _, _ := unstructured.NestedInt64(cq.Object, "status", "pendingWorkloads")
	admitted, _, _ := unstructured.NestedInt64(cq.Object, "status", "admittedWorkloads")
	s.QueuedPods, s.AdmittedPods = int32(pending), int32(admitted)
	flavors, _, _ := unstructured.NestedSlice(cq.Object, "status", "flavorsReservation")
	for _, f := range flavors {
		rs, _, _ := unstructured.NestedSlice(f.(map[string]any), "resources")
		for _, r := range rs {
			rm, _ := r.(map[string]any)
			if rm["name"] != contract.ResourceGPU {
				continue
			}
			s.UsedGPUs += quantity(rm["total"])
			s.BorrowedGPUs += quantity(rm["borrowed"])
		}
	}
	return s
}

func quantity(v any) int64 {
	str, _ := v.(string)
	q, err := resource.ParseQuantity(str)
	if err != nil {
		return 0
	}
	return q.Value()
}
