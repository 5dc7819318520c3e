package team

import (
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestQuotaChangeNamesEachResourceThatChanged(t *testing.T) {
	list := func(kv ...string) corev1.ResourceList {
		l := corev1.ResourceList{}
		for i := 0; i < len(kv); i += 2 {
			l[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
		}
		return l
	}
	for _, tc := range []struct {
		name          string
		before, after corev1.ResourceList
		want          string
	}{
		{"unchanged, spelled differently", list("requests.cpu", "1", "requests.nvidia.com/gpu", "2"), list("requests.cpu", "1000m", "requests.nvidia.com/gpu", "2"), ""},
		{"GPUs raised", list("requests.nvidia.com/gpu", "2"), list("requests.nvidia.com/gpu", "6"), "requests.nvidia.com/gpu 2 → 6"},
		{"a limit added and one lifted, in name order", list("requests.nvidia.com/gpu", "2", "pods", "10"), list("requests.nvidia.com/gpu", "2", "requests.cpu", "8"),
			"pods 10 → no limit, requests.cpu no limit → 8"},
		{"the quota removed", list("requests.nvidia.com/gpu", "2"), nil, "requests.nvidia.com/gpu 2 → no limit"},
		{"the quota recreated", nil, list("requests.nvidia.com/gpu", "2"), "requests.nvidia.com/gpu no limit → 2"},
		{"nothing before or after", nil, nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, quotaChange(tc.before, tc.after))
		})
	}
}
