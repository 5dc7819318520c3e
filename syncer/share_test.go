package syncer

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/gpuvc/gpuvc/api/contract"
)

func TestCheckShare(t *testing.T) {
	cases := map[string]checkCase{
		"no share":         {pod: pod().Obj()},
		"half":             {pod: pod().GPUFraction("0.5").Obj()},
		"leading dot":      {pod: pod().GPUFraction(".25").Obj()},
		"memory":           {pod: pod().GPUMemory("20000").Obj()},
		"one device":       {pod: pod().GPUFraction("0.5").Annotation(contract.AnnotationKAIFractionDevices, "1").Obj()},
		"two devices":      {pod: pod().GPUFraction("0.5").Annotation(contract.AnnotationKAIFractionDevices, "2").Obj(), reason: ReasonInvalidGPUShare, says: []string{"gpu-fraction-num-devices"}},
		"fraction and mem": {pod: pod().GPUFraction("0.5").GPUMemory("100").Obj(), reason: ReasonInvalidGPUShare, says: []string{"both"}},
		"memory of a whole GPU": {
			pod: pod().GPUMemory("81920").Obj(), reason: ReasonInvalidGPUShare, says: []string{`[gpu-memory]="81920"`, "below 81920 MiB"},
		},
		"memory garbage": {pod: pod().GPUMemory("20Gi").Obj(), reason: ReasonInvalidGPUShare, says: []string{"whole number of MiB"}},
		"with a GPU": {
			pod: pod().GPUFraction("0.5").GPUs("1").Obj(), reason: ReasonShareWithGPUResource,
			says: []string{"spec.containers[0].resources.limits[nvidia.com/gpu]=1", "not both"},
		},
		"disabled": {
			pod: pod().GPUFraction("0.5").Obj(), edit: func(in *Input) { in.Policy.FractionsEnabled = false },
			reason: ReasonFractionsDisabled, says: []string{"team fraud has GPU sharing disabled"},
		},
		"no name": {pod: pod().GPUFraction("0.5").Obj(), edit: func(in *Input) { in.Pod.Name = "" }, reason: ReasonShareNeedsName},
	}
	for _, bad := range []string{"1", "1.0", "0", "0.0", "-0.5", "+0.5", "NaN", "Inf", "-Inf", "abc", "1e-1", "0x1p-1", " 0.5", "", "0.5.5", "2"} {
		cases["fraction "+strings.TrimSpace(bad+" (bad)")] = checkCase{
			pod: pod().GPUFraction(bad).Obj(), reason: ReasonInvalidGPUShare,
			says: []string{`metadata.annotations[gpu-fraction]="` + bad + `"`, "greater than 0 and less than 1"},
		}
	}
	runCheckTable(t, checkShare, cases)
}

func TestMutateShare(t *testing.T) {
	p := pod().GPUFraction("0.50").Container("sidecar").Obj()
	p.Spec.InitContainers = []corev1.Container{{Name: "init"}}
	in := input(p)
	notes := append(mutateReservedMetadata(in), mutateShare(in)...)
	if diff := cmp.Diff([]string{ReasonReservedMetadataSet, ReasonGPUShareGated}, reasonsOf(notes)); diff != "" {
		t.Errorf("notes (-want +got):\n%s", diff)
	}
	got := in.Pod
	if diff := cmp.Diff([]corev1.PodSchedulingGate{{Name: contract.GateGPUShare}}, got.Spec.SchedulingGates); diff != "" {
		t.Errorf("gates (-want +got):\n%s", diff)
	}
	want := []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "gpuvc-share-p"}}}}
	for _, c := range append(got.Spec.InitContainers, got.Spec.Containers...) {
		if diff := cmp.Diff(want, c.EnvFrom); diff != "" {
			t.Errorf("container %s envFrom (-want +got):\n%s", c.Name, diff)
		}
	}
	wantLabels := map[string]string{contract.LabelTeam: "fraud", contract.LabelGPUShare: "true"}
	if diff := cmp.Diff(wantLabels, got.Labels); diff != "" {
		t.Errorf("labels (-want +got):\n%s", diff)
	}
	wantAnn := map[string]string{
		contract.AnnotationKAIFraction: "0.50", contract.AnnotationRole: contract.RoleWorkload,
		contract.AnnotationGPUFraction: "0.5", contract.AnnotationShareConfigMap: "gpuvc-share-p",
	}
	if diff := cmp.Diff(wantAnn, got.Annotations); diff != "" {
		t.Errorf("annotations (-want +got):\n%s", diff)
	}
	if again := append(mutateReservedMetadata(in), mutateShare(in)...); len(again) > 0 {
		t.Errorf("not idempotent: %v", reasonsOf(again))
	}
}

func TestShareConfigMapName(t *testing.T) {
	if got := shareConfigMapName("train-x-default-x-fraud"); got != "gpuvc-share-train-x-default-x-fraud" {
		t.Errorf("got %q", got)
	}
	long := strings.Repeat("a", 253)
	got := shareConfigMapName(long)
	if len(got) != 253 || !strings.HasPrefix(got, contract.ShareConfigMapPrefix) {
		t.Errorf("long name: got %q (%d chars)", got, len(got))
	}
	if shareConfigMapName(long) == shareConfigMapName(strings.Repeat("a", 252)+"b") {
		t.Error("different long names must not share a ConfigMap")
	}
}
