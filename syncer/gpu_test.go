package syncer

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	"github.com/gpuvc/gpuvc/api/contract"
)

func TestCheckGPUResources(t *testing.T) {
	runCheckTable(t, checkGPUResources, map[string]checkCase{
		"whole GPU":        {pod: pod().GPUs("2").Obj()},
		"MIG":              {pod: pod().MIG("1g.10gb", "1").Obj()},
		"time-sliced GPU":  {pod: pod().Limit("nvidia.com/gpu.shared", "1").Obj(), reason: ReasonUnsupportedGPUResource, says: []string{"limits[nvidia.com/gpu.shared]", "nvidia.com/gpu"}},
		"half a GPU":       {pod: pod().Limit(contract.ResourceGPU, "500m").Obj(), reason: ReasonNonIntegerGPU, says: []string{"nvidia.com/gpu]=500m", "gpu-fraction"}},
		"cpu is no matter": {pod: pod().Limit("cpu", "500m").Obj()},
	})
}

func TestCheckMIGProfiles(t *testing.T) {
	runCheckTable(t, checkMIGProfiles, map[string]checkCase{
		"allowed profile": {pod: pod().MIG("2g.20gb", "1").Obj()},
		"profile of this GPU, not allowed": {
			pod: pod().MIG("3g.40gb", "1").Obj(), reason: ReasonMIGProfileNotAllowed,
			says: []string{"limits[nvidia.com/mig-3g.40gb]", "not allowed for team fraud", "allowed: 1g.10gb, 2g.20gb"},
		},
		"H100 NVL profile maps":  {pod: pod().MIG("1g.12gb", "1").Obj()},
		"A100-40GB profile maps": {pod: pod().MIG("1g.5gb", "1").Obj()},
		"too large to map": {
			pod: pod().MIG("7g.94gb", "1").Obj(), reason: ReasonMIGProfileNotAllowed,
			says: []string{"no allowed profile at least as large", "allowed: 1g.10gb, 2g.20gb"},
		},
		"garbage profile": {pod: pod().Limit("nvidia.com/mig-big", "1").Obj(), reason: ReasonMIGProfileNotAllowed},
		"no mapper: exact only": {
			pod: pod().MIG("1g.12gb", "1").Obj(), edit: func(in *Input) { in.MIG = nil }, reason: ReasonMIGProfileNotAllowed,
		},
		"no MIG for the team": {
			pod: pod().MIG("1g.10gb", "1").Obj(), edit: func(in *Input) { in.Policy.AllowedMIGProfiles = nil },
			reason: ReasonMIGProfileNotAllowed, says: []string{"may not use MIG profiles"},
		},
		"WholeGPUAs profile counts as allowed": {
			pod: pod().MIG("3g.40gb", "1").Obj(), edit: func(in *Input) { in.Policy.WholeGPUAs = "3g.40gb" },
		},
	})
}

func TestCheckGPUCount(t *testing.T) {
	runCheckTable(t, checkGPUCount, map[string]checkCase{
		"at the limit":  {pod: pod().GPUs("4").Obj()},
		"whole and MIG": {pod: pod().GPUs("3").MIG("1g.10gb", "2").Obj(), reason: ReasonGPUCountAboveLimit, says: []string{"requests 5 GPU device(s)", "at most 4", "MaxGPUsPerPod=4"}},
		"huge":          {pod: pod().GPUs("1000").Obj(), reason: ReasonGPUCountAboveLimit, says: []string{"nvidia.com/gpu: 1000"}},
		"team without GPUs": {
			pod: pod().GPUs("1").Obj(), edit: func(in *Input) { in.Policy.MaxGPUsPerPod = 0 },
			reason: ReasonGPUCountAboveLimit, says: []string{"may not request GPUs", "MaxGPUsPerPod=0"},
		},
	})
}

func TestPodDevices(t *testing.T) {
	gpu := func(n string) corev1.Container {
		q := resource.MustParse(n)
		return corev1.Container{Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{contract.ResourceGPU: q}}}
	}
	sidecar := gpu("1")
	sidecar.RestartPolicy = ptr.To(corev1.ContainerRestartPolicyAlways)
	cases := map[string]struct {
		init, containers []corev1.Container
		want             int64
	}{
		"containers add up":             {containers: []corev1.Container{gpu("1"), gpu("2")}, want: 3},
		"init runs alone":               {init: []corev1.Container{gpu("4")}, containers: []corev1.Container{gpu("1")}, want: 4},
		"sidecar runs with containers":  {init: []corev1.Container{sidecar}, containers: []corev1.Container{gpu("2")}, want: 3},
		"init after sidecar adds to it": {init: []corev1.Container{sidecar, gpu("3")}, containers: []corev1.Container{gpu("1")}, want: 4},
		"request without limit counts":  {containers: []corev1.Container{{Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{contract.ResourceGPU: resource.MustParse("2")}}}}, want: 2},
		"no GPUs":                       {containers: []corev1.Container{{}}, want: 0},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p := &corev1.Pod{Spec: corev1.PodSpec{InitContainers: tc.init, Containers: tc.containers}}
			if got := totalDevices(podDevices(p)); got != tc.want {
				t.Errorf("got %d devices, want %d", got, tc.want)
			}
		})
	}
}

func TestGPUMutations(t *testing.T) {
	cases := map[string]struct {
		pod         *corev1.Pod
		wholeAs     string
		want        corev1.ResourceList
		wantReasons []string
	}{
		"whole GPU passes through": {
			pod: pod().GPUs("2").Obj(), want: corev1.ResourceList{contract.ResourceGPU: resource.MustParse("2")},
		},
		"whole GPU mapped to the team's profile": {
			pod: pod().GPUs("2").Obj(), wholeAs: "1g.10gb",
			want: corev1.ResourceList{"nvidia.com/mig-1g.10gb": resource.MustParse("2")}, wantReasons: []string{ReasonWholeGPUMapped},
		},
		"NVL profile mapped to the smallest allowed profile with as much memory": {
			pod:  pod().MIG("1g.12gb", "1").Obj(),
			want: corev1.ResourceList{"nvidia.com/mig-2g.20gb": resource.MustParse("1")}, wantReasons: []string{ReasonMIGProfileMapped},
		},
		"mapped profile merges with the same allowed one": {
			pod:  pod().MIG("1g.5gb", "1").MIG("1g.10gb", "2").Obj(),
			want: corev1.ResourceList{"nvidia.com/mig-1g.10gb": resource.MustParse("3")}, wantReasons: []string{ReasonMIGProfileMapped},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			in := input(tc.pod)
			in.Policy.WholeGPUAs = tc.wholeAs
			notes := append(mutateWholeGPUAsMIG(in), mutateMIGProfiles(in)...)
			c := in.Pod.Spec.Containers[0].Resources
			if diff := cmp.Diff(tc.want, c.Limits); diff != "" {
				t.Errorf("limits (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.want, c.Requests); diff != "" {
				t.Errorf("requests (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantReasons, reasonsOf(notes)); diff != "" {
				t.Errorf("notes (-want +got):\n%s", diff)
			}
		})
	}
}

func TestControlPlaneGPU(t *testing.T) {
	runCheckTable(t, checkControlPlaneGPU, map[string]checkCase{
		"no GPU": {pod: pod().Obj()},
		"GPU":    {pod: pod().GPUs("1").Obj(), reason: ReasonControlPlaneGPU, says: []string{"StatefulSet fraud", "nvidia.com/gpu"}},
		// The team's LimitRange defaults every container to nvidia.com/gpu: 0.
		"zero GPUs from the LimitRange default": {pod: pod().GPUs("0").Obj()},
		"fraction":                              {pod: pod().GPUFraction("0.5").Obj(), reason: ReasonControlPlaneGPU},
	})
}
