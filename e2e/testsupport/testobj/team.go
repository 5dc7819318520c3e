package testobj

import (
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gpuvcv1 "github.com/gpuvc/gpuvc/api/v1alpha1"
)

// TeamWrapper builds a Team.
type TeamWrapper struct{ gpuvcv1.Team }

// Team returns a Team in the given pool with an empty quota.
func Team(name, pool string) *TeamWrapper {
	return &TeamWrapper{gpuvcv1.Team{
		TypeMeta:   metav1.TypeMeta{APIVersion: gpuvcv1.GroupVersion.String(), Kind: "Team"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       gpuvcv1.TeamSpec{Pool: pool},
	}}
}

// Obj returns the built Team.
func (w *TeamWrapper) Obj() *gpuvcv1.Team { return w.Team.DeepCopy() }

// GPUs sets the whole-GPU quota.
func (w *TeamWrapper) GPUs(n int32) *TeamWrapper { w.Spec.Quota.GPUs = &n; return w }

// MIG sets the quota of one MIG profile.
func (w *TeamWrapper) MIG(profile string, n int32) *TeamWrapper {
	if w.Spec.Quota.MIG == nil {
		w.Spec.Quota.MIG = map[string]int32{}
	}
	w.Spec.Quota.MIG[profile] = n
	return w
}

// CPU and Memory set those quotas.
func (w *TeamWrapper) CPU(q string) *TeamWrapper {
	v := resource.MustParse(q)
	w.Spec.Quota.CPU = &v
	return w
}

// Memory sets the memory quota.
func (w *TeamWrapper) Memory(q string) *TeamWrapper {
	v := resource.MustParse(q)
	w.Spec.Quota.Memory = &v
	return w
}

// Pods sets the pod-count quota.
func (w *TeamWrapper) Pods(n int32) *TeamWrapper { w.Spec.Quota.Pods = &n; return w }

// MaxGPUsPerPod sets the per-pod GPU maximum.
func (w *TeamWrapper) MaxGPUsPerPod(n int32) *TeamWrapper { w.Spec.MaxGPUsPerPod = &n; return w }

// Fractions enables fractional GPU sharing.
func (w *TeamWrapper) Fractions() *TeamWrapper {
	if w.Spec.GPUSharing == nil {
		w.Spec.GPUSharing = &gpuvcv1.GPUSharing{}
	}
	w.Spec.GPUSharing.Fractions = true
	return w
}

// Member adds a User or Group member.
func (w *TeamWrapper) Member(kind, name string) *TeamWrapper {
	w.Spec.Members = append(w.Spec.Members, gpuvcv1.Member{Kind: kind, Name: name})
	return w
}

// Egress allows an egress CIDR.
func (w *TeamWrapper) Egress(cidr string) *TeamWrapper {
	if w.Spec.Network == nil {
		w.Spec.Network = &gpuvcv1.Network{}
	}
	w.Spec.Network.AllowedEgressCIDRs = append(w.Spec.Network.AllowedEgressCIDRs, cidr)
	return w
}

// IdleGPUPods sets spec.idle.gpuPods: pods whose GPUs stay at or below
// maxPercent for after get action (Notify or Evict), or the whole team sleeps
// once all are (Sleep, with SleepAfter).
func (w *TeamWrapper) IdleGPUPods(after time.Duration, action string, maxPercent int32) *TeamWrapper {
	if w.Spec.Idle == nil {
		w.Spec.Idle = &gpuvcv1.Idle{}
	}
	w.Spec.Idle.GPUPods = &gpuvcv1.GPUPodIdle{After: metav1.Duration{Duration: after}, Action: action, MaxUtilizationPercent: maxPercent}
	return w
}

// SleepAfter sets spec.idle.vcluster.sleepAfter: the vCluster sleeps after d
// without team pods or API connections.
func (w *TeamWrapper) SleepAfter(d time.Duration) *TeamWrapper {
	if w.Spec.Idle == nil {
		w.Spec.Idle = &gpuvcv1.Idle{}
	}
	w.Spec.Idle.VCluster = &gpuvcv1.VClusterIdle{SleepAfter: metav1.Duration{Duration: d}}
	return w
}

// DRA lets the team's pods use DRA ResourceClaims of classes (none: the
// default classes).
func (w *TeamWrapper) DRA(classes ...string) *TeamWrapper {
	w.Spec.DRA = &gpuvcv1.DRA{DeviceClasses: classes}
	return w
}
