package teamqueue

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"

	gpuvcv1 "github.com/gpuvc/gpuvc/api/v1alpha1"
)

func TestShareOut(t *testing.T) {
	for name, tc := range map[string]struct {
		total   int64
		weights map[string]int64
		want    map[string]int64
	}{
		"one lender takes it all":         {3, map[string]int64{"a": 4}, map[string]int64{"a": 3}},
		"in proportion":                   {3, map[string]int64{"a": 4, "b": 2}, map[string]int64{"a": 2, "b": 1}},
		"largest remainder, ties by name": {1, map[string]int64{"b": 2, "a": 2}, map[string]int64{"a": 1, "b": 0}},
		"never more than lendable":        {9, map[string]int64{"a": 1, "b": 2}, map[string]int64{"a": 1, "b": 2}},
		"nothing borrowed":                {0, map[string]int64{"a": 1}, nil},
		"nobody lends":                    {2, map[string]int64{}, nil},
	} {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, shareOut(tc.total, tc.weights)); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
		})
	}
}

// clusterQueue builds a ClusterQueue of the a100 cohort with one whole-GPU
// quota and its reservation.
func clusterQueue(name string, nominal int64, lending *int64, total, borrowed int64) *unstructured.Unstructured {
	res := map[string]any{"name": "nvidia.com/gpu", "nominalQuota": nominal}
	if lending != nil {
		res["lendingLimit"] = *lending
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"spec": map[string]any{"cohortName": "gpuvc-a100", "resourceGroups": []any{
			map[string]any{"flavors": []any{map[string]any{"name": "gpuvc-a100-gpu", "resources": []any{res}}}},
		}},
		"status": map[string]any{"flavorsReservation": []any{
			map[string]any{"name": "gpuvc-a100-gpu", "resources": []any{
				map[string]any{"name": "nvidia.com/gpu", "total": total, "borrowed": borrowed},
			}},
		}},
	}}
	u.SetName(name)
	return u
}

func TestLent(t *testing.T) {
	borrower := clusterQueue("gpuvc-b", 4, nil, 6, 2)
	for name, tc := range map[string]struct {
		cohort []*unstructured.Unstructured
		want   map[string]int64
	}{
		"one idle lender lends what is borrowed": {
			[]*unstructured.Unstructured{clusterQueue("gpuvc-l", 4, nil, 0, 0), borrower},
			map[string]int64{"gpuvc-l": 2, "gpuvc-b": 0}},
		"a busy lender lends only its idle part": {
			[]*unstructured.Unstructured{clusterQueue("gpuvc-l", 4, nil, 3, 0), clusterQueue("gpuvc-m", 4, nil, 1, 0), borrower},
			// idle 1 and 3: 2 borrowed shared 0.5 / 1.5 → largest remainder
			map[string]int64{"gpuvc-l": 1, "gpuvc-m": 1}},
		"the lending limit bounds what is lendable": {
			[]*unstructured.Unstructured{clusterQueue("gpuvc-l", 4, ptr.To[int64](1), 0, 0), clusterQueue("gpuvc-m", 4, nil, 0, 0), borrower},
			// idle lendable 1 and 4: 2 × 1/5 = 0.4, 2 × 4/5 = 1.6
			map[string]int64{"gpuvc-l": 0, "gpuvc-m": 2}},
	} {
		t.Run(name, func(t *testing.T) {
			got := map[string]int64{}
			for n := range tc.want {
				got[n] = lent(n, tc.cohort, "gpuvc-a100-gpu", "nvidia.com/gpu")
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
		})
	}
}

func TestStatusPerFlavor(t *testing.T) {
	team := &gpuvcv1.Team{Spec: gpuvcv1.TeamSpec{Pool: "a100",
		Quota:    gpuvcv1.Quota{GPUs: ptr.To[int32](4), MIG: map[string]int32{"1g.10gb": 2}},
		Queueing: &gpuvcv1.Queueing{BorrowingLimit: &gpuvcv1.GPUAmount{GPUs: ptr.To[int32](2), MIG: map[string]int32{"1g.10gb": 3}}}}}
	cq := clusterQueue("gpuvc-vision", 4, nil, 6, 2)
	_ = unstructured.SetNestedField(cq.Object, int64(5), "status", "pendingWorkloads")
	_ = unstructured.SetNestedField(cq.Object, int64(7), "status", "admittedWorkloads")
	_ = unstructured.SetNestedField(cq.Object, int64(250), "status", "fairSharing", "weightedShare")
	_ = unstructured.SetNestedSlice(cq.Object, append(cq.Object["status"].(map[string]any)["flavorsReservation"].([]any),
		map[string]any{"name": "gpuvc-a100-mig-1g.10gb", "resources": []any{map[string]any{"name": "nvidia.com/mig-1g.10gb", "total": "3", "borrowed": "1"}}}),
		"status", "flavorsReservation")
	waiting := workload(false, 2, map[string]any{"nvidia.com/gpu": "1"})
	mixed := workload(false, 1, map[string]any{"nvidia.com/mig-1g.10gb": "2", "cpu": "500m"})
	admitted := workload(true, 1, map[string]any{"nvidia.com/gpu": "4"})

	got := Status(team, Standing{ClusterQueue: cq, Cohort: []*unstructured.Unstructured{cq}, Workloads: []*unstructured.Unstructured{waiting, mixed, admitted}})
	want := &gpuvcv1.QueueStatus{
		ClusterQueue: "gpuvc-vision", GuaranteedGPUs: 4, BorrowingLimitGPUs: 2, UsedGPUs: 6, BorrowedGPUs: 2,
		AdmittedPods: 7, QueuedPods: 5, WeightedShare: 250,
		Flavors: []gpuvcv1.QueueFlavorStatus{
			{Flavor: "gpuvc-a100-gpu", Resource: "nvidia.com/gpu", Guaranteed: 4, BorrowingLimit: 2, Used: 6, Borrowed: 2, Queued: 2},
			{Flavor: "gpuvc-a100-mig-1g.10gb", Resource: "nvidia.com/mig-1g.10gb", Guaranteed: 2, BorrowingLimit: 3, Used: 3, Borrowed: 1, Queued: 2},
		},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got)\n%s", diff)
	}
}

// workload is a Workload with one pod set of count pods, each with one
// container limited to limits; admitted ones have quota reserved.
func workload(admitted bool, count int64, limits map[string]any) *unstructured.Unstructured {
	status := "False"
	if admitted {
		status = "True"
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"spec": map[string]any{"podSets": []any{map[string]any{"name": "main", "count": count, "template": map[string]any{
			"spec": map[string]any{"containers": []any{map[string]any{"name": "c", "resources": map[string]any{"limits": limits}}}},
		}}}},
		"status": map[string]any{"conditions": []any{map[string]any{"type": "QuotaReserved", "status": status}}},
	}}
}
