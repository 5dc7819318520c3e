package syncer

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/gpuvc/gpuvc/api/contract"
)

func TestCheckPrivileged(t *testing.T) {
	ephemeral := pod().Obj()
	ephemeral.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
		Name: "debug", SecurityContext: &corev1.SecurityContext{Privileged: ptr.To(true)},
	}}}
	runCheckTable(t, checkPrivileged, map[string]checkCase{
		"plain pod":            {pod: pod().Obj()},
		"privileged container": {pod: pod().Privileged().Obj(), reason: ReasonPrivileged, says: []string{"spec.containers[0].securityContext.privileged=true", "remove it"}},
		"privileged ephemeral": {pod: ephemeral, reason: ReasonPrivileged, says: []string{"spec.ephemeralContainers[0]"}},
	})
}

func TestCheckHostAccess(t *testing.T) {
	runCheckTable(t, checkHostPath, map[string]checkCase{
		"no volumes": {pod: pod().Obj()},
		"hostPath":   {pod: pod().HostPath("dev", "/dev").Obj(), reason: ReasonHostPath, says: []string{"spec.volumes[0]", `"/dev"`, "emptyDir"}},
	})
	runCheckTable(t, checkHostNamespaces, map[string]checkCase{
		"own namespaces": {pod: pod().Obj()},
		"hostNetwork":    {pod: pod().HostNetwork().Obj(), reason: ReasonHostNamespace, says: []string{"spec.hostNetwork=true"}},
		"hostPID":        {pod: pod().HostPID().Obj(), reason: ReasonHostNamespace, says: []string{"spec.hostPID=true"}},
		"hostIPC":        {pod: pod().HostIPC().Obj(), reason: ReasonHostNamespace, says: []string{"spec.hostIPC=true"}},
	})
}

func TestCheckGPUEnv(t *testing.T) {
	runCheckTable(t, checkGPUEnv, map[string]checkCase{
		"other env":                 {pod: pod().Env("CUDA_VISIBLE_DEVICES", "0").Obj()},
		"NVIDIA_VISIBLE_DEVICES":    {pod: pod().Env("NVIDIA_VISIBLE_DEVICES", "all").Obj(), reason: ReasonGPUEnv, says: []string{`env[NVIDIA_VISIBLE_DEVICES]="all"`}},
		"NVIDIA_MIG_CONFIG_DEVICES": {pod: pod().Env("NVIDIA_MIG_CONFIG_DEVICES", "all").Obj(), reason: ReasonGPUEnv},
	})
}

func TestCheckGPULimitEnv(t *testing.T) {
	runCheckTable(t, checkGPULimitEnv, map[string]checkCase{
		"whole-GPU pod may set them": {pod: pod().Env("CUDA_DEVICE_MEMORY_LIMIT_0", "1g").Obj()},
		"fraction, other env":        {pod: pod().Annotation(contract.AnnotationKAIFraction, "0.5").Env("CUDA_VISIBLE_DEVICES", "0").Obj()},
		"fraction, memory limit of device 0": {pod: pod().Annotation(contract.AnnotationKAIFraction, "0.5").Env("CUDA_DEVICE_MEMORY_LIMIT_0", "80g").Obj(),
			reason: ReasonGPULimitEnv, says: []string{`env[CUDA_DEVICE_MEMORY_LIMIT_0]="80g"`, "fractionLimits"}},
		"memory share, all-device limit": {pod: pod().Annotation(contract.AnnotationKAIMemory, "20000").Env("CUDA_DEVICE_MEMORY_LIMIT", "80g").Obj(), reason: ReasonGPULimitEnv},
		"fraction, SM limit":             {pod: pod().Annotation(contract.AnnotationKAIFraction, "0.5").Env("CUDA_DEVICE_SM_LIMIT", "100").Obj(), reason: ReasonGPULimitEnv},
	})
}

func TestCheckReservedConfigMaps(t *testing.T) {
	cmVolume := pod().Obj()
	cmVolume.Spec.Volumes = []corev1.Volume{{Name: "v", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
		LocalObjectReference: corev1.LocalObjectReference{Name: "gpuvc-share-other"}}}}}
	keyRef := pod().Obj()
	keyRef.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "X", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: "gpuvc-share-other"}, Key: "NVIDIA_VISIBLE_DEVICES"}}}}
	runCheckTable(t, checkReservedConfigMaps, map[string]checkCase{
		"own ConfigMap":              {pod: pod().EnvFromConfigMap("settings").Obj()},
		"another pod's share":        {pod: pod().EnvFromConfigMap("gpuvc-share-victim").Obj(), reason: ReasonReservedConfigMap, says: []string{"envFrom[0].configMapRef.name=gpuvc-share-victim"}},
		"share pod reading its own":  {pod: pod().GPUFraction("0.5").EnvFromConfigMap("gpuvc-share-p").Obj()},
		"non-share pod with its own": {pod: pod().EnvFromConfigMap("gpuvc-share-p").Obj(), reason: ReasonReservedConfigMap},
		"volume":                     {pod: cmVolume, reason: ReasonReservedConfigMap, says: []string{"spec.volumes[0].configMap.name"}},
		"env key ref":                {pod: keyRef, reason: ReasonReservedConfigMap, says: []string{"valueFrom.configMapKeyRef"}},
	})
}

func TestReservedServiceAccount(t *testing.T) {
	reserve := func() *corev1.Pod {
		p := pod().Obj()
		p.Spec.ServiceAccountName = contract.ReserveServiceAccount
		return p
	}
	runCheckTable(t, checkReservedServiceAccount, map[string]checkCase{
		"own service account": {pod: pod().Obj()},
		"tenant borrows the reservation account": {
			pod: reserve(), reason: ReasonReservedServiceAccount, says: []string{"spec.serviceAccountName=gpuvc-reserve", "reserved"},
		},
		"gpuvc's own reservation pod": {pod: reserve(), edit: func(in *Input) { in.Trusted = true }},
	})
}
