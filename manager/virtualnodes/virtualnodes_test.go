package virtualnodes

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	gpuvcv1 "github.com/gpuvc/gpuvc/api/v1alpha1"
)

func list(kv ...string) corev1.ResourceList {
	out := corev1.ResourceList{}
	for i := 0; i < len(kv); i += 2 {
		out[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return out
}

func ptr[T any](v T) *T { return &v }

// A team's node shows its quota, never more than the host node allocates, and
// none of the host's other GPU resources.
func TestWant(t *testing.T) {
	host := list("cpu", "16", "nvidia.com/gpu", "2", "nvidia.com/mig-1g.10gb", "4", "nvidia.com/mig-3g.40gb", "2")
	for name, tc := range map[string]struct {
		quota gpuvcv1.Quota
		want  corev1.ResourceList
	}{
		"below the host":           {gpuvcv1.Quota{GPUs: ptr(int32(1)), MIG: map[string]int32{"1g.10gb": 1}}, list("nvidia.com/gpu", "1", "nvidia.com/mig-1g.10gb", "1")},
		"above the host":           {gpuvcv1.Quota{GPUs: ptr(int32(8))}, list("nvidia.com/gpu", "2")},
		"a profile the host lacks": {gpuvcv1.Quota{MIG: map[string]int32{"2g.20gb": 3}}, list()},
		"zero":                     {gpuvcv1.Quota{GPUs: ptr(int32(0))}, list()},
		"no GPU quota":             {gpuvcv1.Quota{}, list()},
	} {
		t.Run(name, func(t *testing.T) {
			if d := cmp.Diff(tc.want, Want(tc.quota, host)); d != "" {
				t.Error(d)
			}
		})
	}
}

// The patch sets the wanted GPUs in capacity and allocatable, removes other
// NVIDIA resources, leaves the rest alone, and is nil once they are right.
func TestPatch(t *testing.T) {
	status := corev1.NodeStatus{
		Capacity:    list("cpu", "16", "nvidia.com/mig-3g.40gb", "2"),
		Allocatable: list("cpu", "16"),
	}
	want := list("nvidia.com/gpu", "1")
	b := Patch(status, want)
	var got map[string]map[string]map[string]any
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	wantPatch := map[string]map[string]map[string]any{"status": {
		"capacity":    {"nvidia.com/gpu": "1", "nvidia.com/mig-3g.40gb": nil},
		"allocatable": {"nvidia.com/gpu": "1"},
	}}
	if d := cmp.Diff(wantPatch, got); d != "" {
		t.Error(d)
	}
	status.Capacity = list("cpu", "16", "nvidia.com/gpu", "1")
	status.Allocatable = list("cpu", "15", "nvidia.com/gpu", "1")
	if b := Patch(status, want); b != nil {
		t.Errorf("patch of a node already right: %s", b)
	}
}
