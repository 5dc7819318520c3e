package contract

// Dynamic Resource Allocation (resource.k8s.io/v1): the names NVIDIA's DRA
// driver for GPUs publishes under, which gpuvc's simulated driver (gpu/dra)
// uses too, as the simulated device plugin uses nvidia.com/gpu: a fence
// written against these names holds for the real driver and the simulated one.
const (
	// DRADriver is the driver name of GPU ResourceSlices and allocation
	// results, and the domain of their device attributes.
	DRADriver = "gpu.nvidia.com"
	// DeviceClassGPU selects whole GPUs (attribute type == "gpu");
	// DeviceClassMIG selects MIG devices (type == "mig").
	DeviceClassGPU = "gpu.nvidia.com"
	DeviceClassMIG = "mig.nvidia.com"
	// DRAAttributeType is the attribute whose value is DRATypeGPU or DRATypeMIG.
	DRAAttributeType = "type"
	DRATypeGPU       = "gpu"
	DRATypeMIG       = "mig"
	// DRAAttributeUUID is a device's GPU or MIG UUID (what NVIDIA_VISIBLE_DEVICES names).
	DRAAttributeUUID = "uuid"
	// DRAAttributeSimulated (qualified: gpuvc's domain, not the driver's)
	// marks devices of simulated GPUs.
	DRAAttributeSimulated = "gpuvc.dev/simulated"
	// EnvDRADevicePrefix starts the variable the simulated driver sets in a
	// container for each device it was given, GPUVC_DRA_DEVICE_<DEVICE>=<uuid>
	// (device name upper-cased, dashes as underscores): unlike
	// NVIDIA_VISIBLE_DEVICES, one per device, so a container with devices of
	// several claims or requests sees each.
	EnvDRADevicePrefix = "GPUVC_DRA_DEVICE_"
)
