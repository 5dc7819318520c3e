// Package inventory describes the GPUs of a node: read from NVML on a real
// node, or simulated from a declared spec on kwok/kind nodes. The node agent
// publishes an Inventory as a JSON annotation and derives from it the labels
// GPU Feature Discovery would set and the capacity the NVIDIA device plugin
// would advertise.
package inventory

// Inventory is a node's GPUs. Field names are a stable JSON contract.
type Inventory struct {
	DriverVersion string `json:"driverVersion,omitempty"`
	// CUDAVersion is the newest CUDA the driver supports, "13.0" (what
	// nvidia-smi prints as CUDA Version).
	CUDAVersion string `json:"cudaVersion,omitempty"`
	Simulated   bool   `json:"simulated,omitempty"`
	GPUs        []GPU  `json:"gpus"`
}

// GPU is one physical GPU.
type GPU struct {
	Index     int    `json:"index"`
	UUID      string `json:"uuid"`
	Product   string `json:"product"` // as NVML reports it, e.g. "NVIDIA A100-SXM4-40GB"
	MemoryMiB int64  `json:"memoryMiB"`
	// PCIBusID is the GPU's PCI address as nvidia-smi prints it,
	// "00000000:19:00.0"; empty where NVML does not say.
	PCIBusID string `json:"pciBusId,omitempty"`
	// ComputeCapability is CUDA's "major.minor", e.g. "9.0"; empty where
	// NVML does not say.
	ComputeCapability string `json:"computeCapability,omitempty"`
	MIG               MIG    `json:"mig"`
	// DRA: the GPU (and its MIG devices) is served through Dynamic Resource
	// Allocation (gpu/dra's kubelet plugin), not the device plugin. A node's
	// GPU is served one way; only simulated GPUs are (Spec.DRA).
	DRA bool `json:"dra,omitempty"`
}

// MIG is a GPU's MIG mode and its GPU instances.
type MIG struct {
	Capable bool `json:"capable"`
	Enabled bool `json:"enabled"` // current mode
	Pending bool `json:"pending"` // mode after the next GPU reset
	// Instances are ordered by placement start.
	Instances []GPUInstance `json:"instances,omitempty"`
}

// GPUInstance is one MIG GPU instance and the MIG devices inside it.
type GPUInstance struct {
	ID      int    `json:"id"`
	Profile string `json:"profile"` // e.g. "1g.10gb+me"
	// ProfileID is the profile id NVML reports: the driver id (as in
	// `nvidia-smi mig -lgip`) on hardware; go-nvml's mocks report an index.
	ProfileID       int         `json:"profileId"`
	Start           int         `json:"start"`
	Size            int         `json:"size"`
	MemoryMiB       int64       `json:"memoryMiB"`
	Multiprocessors int         `json:"multiprocessors,omitempty"`
	Devices         []MIGDevice `json:"devices,omitempty"`
}

// MIGDevice is a compute instance exposed as a device (what pods get).
type MIGDevice struct {
	UUID              string `json:"uuid"`
	ComputeInstanceID int    `json:"computeInstanceId"`
}

// Source yields a node's inventory: NVML on real nodes, a spec on fake ones.
type Source interface {
	Inventory() (Inventory, error)
}

// SplitDRA splits inv into the GPUs the device plugin serves and those served
// through DRA (GPU.DRA), each with inv's other fields.
func SplitDRA(inv Inventory) (devicePlugin, dra Inventory) {
	devicePlugin, dra = inv, inv
	devicePlugin.GPUs, dra.GPUs = []GPU{}, []GPU{}
	for _, g := range inv.GPUs {
		if g.DRA {
			dra.GPUs = append(dra.GPUs, g)
		} else {
			devicePlugin.GPUs = append(devicePlugin.GPUs, g)
		}
	}
	return devicePlugin, dra
}
