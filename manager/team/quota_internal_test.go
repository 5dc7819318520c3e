package team

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gpuvcv1 "github.com/gpuvc/gpuvc/api/v1alpha1"
)

// Per-StorageClass limits become the ResourceQuota's class-scoped resources
// beside the total.
func TestQuotaHardPerStorageClass(t *testing.T) {
	q := func(s string) *resource.Quantity { v := resource.MustParse(s); return &v }
	claims := int32(4)
	hard := quotaHard(gpuvcv1.Quota{Storage: q("1Ti"), StorageClasses: map[string]gpuvcv1.StorageClassQuota{
		"fast":     {Storage: q("100Gi"), Claims: &claims},
		"standard": {Storage: q("1Ti")},
	}})
	want := map[string]string{
		"requests.storage": "1Ti",
		"fast.storageclass.storage.k8s.io/requests.storage":       "100Gi",
		"fast.storageclass.storage.k8s.io/persistentvolumeclaims": "4",
		"standard.storageclass.storage.k8s.io/requests.storage":   "1Ti",
	}
	got := map[string]string{}
	for name, v := range hard {
		got[string(name)] = v.String()
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("hard (-want +got):\n%s", diff)
	}
}

// A spec.dra team's quota holds each allowed DeviceClass's devices at its
// whole-GPU quota (a DRA device counts as one GPU); without spec.dra or
// without a GPU quota there is no class entry.
func TestQuotaOfDRATeam(t *testing.T) {
	gpus := int32(4)
	for name, tc := range map[string]struct {
		spec gpuvcv1.TeamSpec
		want map[string]string
	}{
		"default classes with MIG": {
			spec: gpuvcv1.TeamSpec{Quota: gpuvcv1.Quota{GPUs: &gpus, MIG: map[string]int32{"1g.10gb": 2}}, DRA: &gpuvcv1.DRA{}},
			want: map[string]string{"requests.nvidia.com/gpu": "4", "requests.nvidia.com/mig-1g.10gb": "2",
				"gpu.nvidia.com.deviceclass.resource.k8s.io/devices": "4", "mig.nvidia.com.deviceclass.resource.k8s.io/devices": "4"},
		},
		"listed class": {
			spec: gpuvcv1.TeamSpec{Quota: gpuvcv1.Quota{GPUs: &gpus}, DRA: &gpuvcv1.DRA{DeviceClasses: []string{"gpu.example.com"}}},
			want: map[string]string{"requests.nvidia.com/gpu": "4", "gpu.example.com.deviceclass.resource.k8s.io/devices": "4"},
		},
		"no spec.dra":  {spec: gpuvcv1.TeamSpec{Quota: gpuvcv1.Quota{GPUs: &gpus}}, want: map[string]string{"requests.nvidia.com/gpu": "4"}},
		"no GPU quota": {spec: gpuvcv1.TeamSpec{Quota: gpuvcv1.Quota{Pods: &gpus}, DRA: &gpuvcv1.DRA{}}, want: map[string]string{"pods": "4"}},
	} {
		t.Run(name, func(t *testing.T) {
			q := desiredQuota(&gpuvcv1.Team{ObjectMeta: metav1.ObjectMeta{Name: "fraud"}, Spec: tc.spec})
			got := map[string]string{}
			for name, v := range *q.Spec.Hard {
				got[string(name)] = v.String()
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("hard (-want +got):\n%s", diff)
			}
		})
	}
}
