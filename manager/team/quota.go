package team

import (
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"

	"github.com/gpuvc/gpuvc/api/contract"
	gpuvcv1 "github.com/gpuvc/gpuvc/api/v1alpha1"
	"github.com/gpuvc/gpuvc/gpu/mig"
)

// ResourceGPU is the whole-GPU resource of the NVIDIA device plugin.
const ResourceGPU corev1.ResourceName = contract.ResourceGPU

// quotaHard turns a Team's quota into ResourceQuota hard limits. Extended resources
// (GPUs, MIG slices) can only be limited on requests.
func quotaHard(q gpuvcv1.Quota) corev1.ResourceList {
	hard := corev1.ResourceList{}
	if q.GPUs != nil {
		hard["requests."+ResourceGPU] = *resource.NewQuantity(int64(*q.GPUs), resource.DecimalSI)
	}
	profiles := make([]string, 0, len(q.MIG))
	for p := range q.MIG {
		profiles = append(profiles, p)
	}
	sort.Strings(profiles)
	for _, p := range profiles {
		hard[corev1.ResourceName("requests."+mig.ResourceName(p))] = *resource.NewQuantity(int64(q.MIG[p]), resource.DecimalSI)
	}
	if q.CPU != nil {
		hard[corev1.ResourceRequestsCPU] = *q.CPU
	}
	if q.Memory != nil {
		hard[corev1.ResourceRequestsMemory] = *q.Memory
	}
	if q.Storage != nil {
		hard[corev1.ResourceRequestsStorage] = *q.Storage
	}
	for class, c := range q.StorageClasses {
		if c.Storage != nil {
			hard[StorageClassResource(class, corev1.ResourceRequestsStorage)] = *c.Storage
		}
		if c.Claims != nil {
			hard[StorageClassResource(class, corev1.ResourcePersistentVolumeClaims)] = *resource.NewQuantity(int64(*c.Claims), resource.DecimalSI)
		}
	}
	if q.Pods != nil {
		hard[corev1.ResourcePods] = *resource.NewQuantity(int64(*q.Pods), resource.DecimalSI)
	}
	return hard
}

// StorageClassResource is the ResourceQuota resource that limits r
// (requests.storage or persistentvolumeclaims) for the claims of one
// StorageClass, e.g. fast.storageclass.storage.k8s.io/requests.storage.
func StorageClassResource(class string, r corev1.ResourceName) corev1.ResourceName {
	return corev1.ResourceName(class + ".storageclass.storage.k8s.io/" + string(r))
}

// DeviceClassResource is the ResourceQuota resource that counts the devices
// the team's ResourceClaims of a DeviceClass request,
// <class>.deviceclass.resource.k8s.io/devices.
func DeviceClassResource(class string) corev1.ResourceName {
	return corev1.ResourceName(class + contract.DeviceClassQuotaSuffix)
}

// desiredQuota is the team's ResourceQuota, or nil when the Team limits nothing.
// With spec.queueing it is the ceiling (guarantee plus borrowing limit) plus
// what may wait beyond it (spec.queueing.maxQueued): Kueue holds the ceiling.
func desiredQuota(t *gpuvcv1.Team) *corev1ac.ResourceQuotaApplyConfiguration {
	q := t.Spec.HostQuota()
	hard := quotaHard(q)
	// A spec.dra team's claims: each allowed DeviceClass may hold up to the
	// team's whole GPUs (a DRA device counts as one GPU; its class does not
	// say its size). gpuvc's webhook holds nvidia.com/gpu and every class
	// together under the same number, which ResourceQuota cannot express.
	if q.GPUs != nil {
		for _, class := range t.Spec.AllowedDeviceClasses() {
			hard[DeviceClassResource(class)] = *resource.NewQuantity(int64(*q.GPUs), resource.DecimalSI)
		}
	}
	if len(hard) == 0 {
		return nil
	}
	return corev1ac.ResourceQuota(QuotaName, gpuvcv1.HostNamespace(t.Name)).
		WithLabels(teamLabels(t)).
		WithSpec(corev1ac.ResourceQuotaSpec().WithHard(hard))
}

// desiredLimitRange caps the GPUs a single pod may request, all containers together
// (spec.maxGPUsPerPod), or nil when there is no per-pod maximum. It is the in-tree
// fence behind the syncer's webhook, which enforces the same bound.
//
// LimitRanger refuses any pod whose containers set no limit for a resource with a
// maximum, so containers without a GPU limit get a default of 0 GPUs; without it
// every CPU-only pod, the vCluster control plane's included, would be refused.
func desiredLimitRange(t *gpuvcv1.Team) *corev1ac.LimitRangeApplyConfiguration {
	if t.Spec.MaxGPUsPerPod == nil {
		return nil
	}
	max := corev1.ResourceList{ResourceGPU: *resource.NewQuantity(int64(*t.Spec.MaxGPUsPerPod), resource.DecimalSI)}
	none := corev1.ResourceList{ResourceGPU: *resource.NewQuantity(0, resource.DecimalSI)}
	return corev1ac.LimitRange(LimitRangeName, gpuvcv1.HostNamespace(t.Name)).
		WithLabels(teamLabels(t)).
		WithSpec(corev1ac.LimitRangeSpec().WithLimits(
			corev1ac.LimitRangeItem().WithType(corev1.LimitTypeContainer).WithMax(max).WithDefault(none).WithDefaultRequest(none),
			corev1ac.LimitRangeItem().WithType(corev1.LimitTypePod).WithMax(max),
		))
}

// gpuUsage reads what the team's pods request now from the quota's status.
func gpuUsage(q *corev1.ResourceQuota) *gpuvcv1.GPUUsage {
	u := &gpuvcv1.GPUUsage{}
	for name, qty := range q.Status.Used {
		res, ok := strings.CutPrefix(string(name), "requests.")
		if !ok {
			continue
		}
		if res == string(ResourceGPU) {
			u.GPUs = qty.Value()
			continue
		}
		if p, err := mig.ParseResourceName(res); err == nil {
			if u.MIG == nil {
				u.MIG = map[string]int64{}
			}
			u.MIG[p.String()] = qty.Value()
		}
	}
	return u
}
