package team

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/resource"

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
