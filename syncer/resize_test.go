package syncer

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestKeepUnresizable(t *testing.T) {
	stored := pod().MIG("1g.10gb", "1").Obj() // what gpuvc admitted (mapped from a whole GPU)
	stored.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("1")
	// vCluster resizes to the tenant's original: whole GPU back, cpu raised.
	resized := pod().GPUs("1").Obj()
	resized.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("2")

	notes := keepUnresizable(resized, stored)
	if len(notes) == 0 {
		t.Fatal("nothing kept")
	}
	want := stored.Spec.Containers[0].Resources.DeepCopy()
	want.Requests[corev1.ResourceCPU] = resource.MustParse("2") // cpu may change
	if diff := cmp.Diff(*want, resized.Spec.Containers[0].Resources); diff != "" {
		t.Errorf("resources (-want +got):\n%s", diff)
	}

	// A resize of cpu alone is left as it is.
	onlyCPU := stored.DeepCopy()
	onlyCPU.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("3")
	if notes := keepUnresizable(onlyCPU, stored); len(notes) != 0 {
		t.Errorf("cpu-only resize changed: %v", notes)
	}
}
