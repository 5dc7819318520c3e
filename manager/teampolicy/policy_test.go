package teampolicy

import (
	"slices"
	"testing"

	"k8s.io/utils/ptr"

	gpuvcv1 "github.com/gpuvc/gpuvc/api/v1alpha1"
)

// spec.dra reaches the policy: DRA on, the allowed classes (default: NVIDIA's
// GPU classes, mig.nvidia.com only with a MIG quota), the GPU ceiling from
// spec.quota.gpus (0, no ceiling, without it). Without spec.dra, none.
func TestPolicyOfDRATeam(t *testing.T) {
	team := func(spec gpuvcv1.TeamSpec) *gpuvcv1.Team {
		spec.Pool = "a100"
		return &gpuvcv1.Team{Spec: spec}
	}
	for name, tc := range map[string]struct {
		team    *gpuvcv1.Team
		dra     bool
		classes []string
		ceiling int64
	}{
		"off":                  {team: team(gpuvcv1.TeamSpec{Quota: gpuvcv1.Quota{GPUs: ptr.To[int32](4)}})},
		"default":              {team: team(gpuvcv1.TeamSpec{Quota: gpuvcv1.Quota{GPUs: ptr.To[int32](4)}, DRA: &gpuvcv1.DRA{}}), dra: true, classes: []string{"gpu.nvidia.com"}, ceiling: 4},
		"default, MIG quota":   {team: team(gpuvcv1.TeamSpec{Quota: gpuvcv1.Quota{MIG: map[string]int32{"1g.10gb": 2}}, DRA: &gpuvcv1.DRA{}}), dra: true, classes: []string{"gpu.nvidia.com", "mig.nvidia.com"}},
		"listed, deduplicated": {team: team(gpuvcv1.TeamSpec{Quota: gpuvcv1.Quota{GPUs: ptr.To[int32](2)}, DRA: &gpuvcv1.DRA{DeviceClasses: []string{"b.example.com", "a.example.com", "b.example.com"}}}), dra: true, classes: []string{"a.example.com", "b.example.com"}, ceiling: 2},
	} {
		t.Run(name, func(t *testing.T) {
			p := Policy(tc.team, "", 0, "")
			if p.DRA != tc.dra || !slices.Equal(p.AllowedDeviceClasses, tc.classes) || p.GPUCeiling != tc.ceiling {
				t.Errorf("DRA %v, classes %v, ceiling %d; want %v, %v, %d", p.DRA, p.AllowedDeviceClasses, p.GPUCeiling, tc.dra, tc.classes, tc.ceiling)
			}
		})
	}
}
