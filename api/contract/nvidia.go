package contract

// Extended resources the NVIDIA device plugin advertises.
const (
	// NVIDIAPrefix starts every NVIDIA resource name and GPU Feature Discovery label.
	NVIDIAPrefix = "nvidia.com/"
	ResourceGPU  = "nvidia.com/gpu"
	// ResourceMIGPrefix starts the MIG resources of the "mixed" strategy,
	// nvidia.com/mig-<profile> (gpu/mig.ResourceName builds them).
	ResourceMIGPrefix = "nvidia.com/mig-"
)

// Node labels of GPU Feature Discovery that gpuvc reads or simulates.
const (
	LabelGPUPresent  = "nvidia.com/gpu.present"
	LabelGPUProduct  = "nvidia.com/gpu.product"
	LabelGPUCount    = "nvidia.com/gpu.count"
	LabelGPUMemory   = "nvidia.com/gpu.memory" // MiB of one GPU
	LabelMIGCapable  = "nvidia.com/mig.capable"
	LabelMIGStrategy = "nvidia.com/mig.strategy"
	// LabelGFDTimestamp is stamped by GFD on every labelling pass.
	LabelGFDTimestamp = "nvidia.com/gfd.timestamp"
)

// DeviceEnv lists the environment variables the NVIDIA container runtime reads
// to decide which devices to expose. Set by a tenant they would bypass the
// device plugin, so both fences (webhook and CEL) refuse them on tenant pods.
func DeviceEnv() []string {
	return []string{EnvVisibleDevices, "NVIDIA_MIG_CONFIG_DEVICES", "NVIDIA_MIG_MONITOR_DEVICES"}
}
