package v1alpha1

import "slices"

// DRA lets the team's pods ask for devices through Dynamic Resource Allocation
// (resource.k8s.io/v1 ResourceClaims and ResourceClaimTemplates) besides the
// device plugin's nvidia.com/ resources. The team's vCluster then syncs its
// claims and claim templates to the host and shows it the host's
// DeviceClasses; gpuvc's fences (webhook and CEL) admit only claims of the
// allowed classes, each request counted (no allocationMode All, no
// adminAccess, no device tolerations), and a DRA device counts as one whole
// GPU against spec.quota.gpus (docs/dra.md). Not with spec.queueing: Kueue
// v0.17 counts no DRA devices.
type DRA struct {
	// DeviceClasses the team's claims may name. Empty: the GPU classes of
	// NVIDIA's DRA driver, gpu.nvidia.com, and mig.nvidia.com when
	// spec.quota.mig is set. Devices come from the nodes of the team's pool
	// (its pods are pinned there and node-local devices are allocated on the
	// node a pod lands on); list only classes of node-local devices.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MaxLength=225
	// +kubebuilder:validation:items:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	DeviceClasses []string `json:"deviceClasses,omitempty"`
}

// The DeviceClasses NVIDIA's DRA driver installs for whole GPUs and MIG
// devices: a spec.dra team's default allow-list.
const (
	DeviceClassGPU = "gpu.nvidia.com"
	DeviceClassMIG = "mig.nvidia.com"
)

// MaxDeviceClasses bounds spec.dra.deviceClasses; MaxDeviceClassNameLength
// keeps a class's quota resource (<class>.deviceclass.resource.k8s.io/devices)
// within the 253 characters of its DNS-subdomain prefix.
const (
	MaxDeviceClasses         = 16
	MaxDeviceClassNameLength = 253 - len(".deviceclass.resource.k8s.io")
)

// AllowedDeviceClasses are the DeviceClasses the team's claims may name,
// sorted; nil when the team does not use DRA (no spec.dra).
func (s *TeamSpec) AllowedDeviceClasses() []string {
	if s.DRA == nil {
		return nil
	}
	if len(s.DRA.DeviceClasses) > 0 {
		c := slices.Clone(s.DRA.DeviceClasses)
		slices.Sort(c)
		return slices.Compact(c)
	}
	c := []string{DeviceClassGPU}
	if len(s.Quota.MIG) > 0 {
		c = append(c, DeviceClassMIG)
	}
	return c
}
