package contract

// Keys of fractional GPUs, between the webhook, the share controller and the
// reservation pods (`gpuvc reserve`). Everything is under gpuvc.dev/, so
// tenants cannot write it, while the share controller, a trusted user, may.
const (
	// LabelGPUShare ("true") marks a fractional pod waiting for, or holding, a
	// share of a GPU; the share controller selects on it.
	LabelGPUShare = "gpuvc.dev/gpu-share"
	// AnnotationGPUFraction is the validated fraction ("0.5"), canonical form.
	AnnotationGPUFraction = "gpuvc.dev/gpu-fraction"
	// AnnotationGPUMemory is the validated memory share in MiB ("20000").
	AnnotationGPUMemory = "gpuvc.dev/gpu-memory-mib"
	// AnnotationShareConfigMap names the ConfigMap every container reads its GPU
	// environment from (NVIDIA_VISIBLE_DEVICES, GPU_PORTION); the share
	// controller creates it before it removes the gate.
	AnnotationShareConfigMap = "gpuvc.dev/gpu-share-configmap"
	// GateGPUShare holds a fractional pod until the share controller has given
	// it a GPU.
	GateGPUShare = "gpuvc.dev/gpu-share"
	// ShareConfigMapPrefix starts every share ConfigMap name; tenants may not
	// reference ConfigMaps with this prefix themselves.
	ShareConfigMapPrefix = "gpuvc-share-"

	// LabelRole marks pods gpuvc creates for itself. Reservation pods carry
	// LabelRole=RoleReservation; only a trusted user can create such a pod.
	LabelRole = "gpuvc.dev/role"
	// RoleReservation is the LabelRole of a reservation pod: it holds one whole
	// GPU (nvidia.com/gpu: 1) in the team's namespace for the team's share pods.
	RoleReservation = "reservation"
	// LabelShareGroup names the reservation (its pod name) a share pod is
	// assigned to; the reservation carries it too. It is the assignment record
	// the share controller rebuilds its state from after a restart.
	LabelShareGroup = "gpuvc.dev/share-group"
	// AnnotationShareUnits is the part of the GPU assigned to a share pod, in
	// units of 1/10000 of a GPU (gpu/share.UnitsPerGPU).
	AnnotationShareUnits = "gpuvc.dev/share-units"
	// AnnotationGPUUUID is the UUID of the GPU a reservation pod holds. The
	// reservation pod's `gpuvc reserve` process writes it on its own pod; on
	// simulated nodes the share controller writes it. Share pods get a copy
	// once bound.
	AnnotationGPUUUID = "gpuvc.dev/gpu-uuid"
	// LabelSharePod marks a share ConfigMap with the name of the pod it serves.
	LabelSharePod = "gpuvc.dev/share-pod"
)

// Keys of a share ConfigMap (the environment of every container of a share
// pod).
const (
	// EnvVisibleDevices tells the NVIDIA container runtime which GPU to expose.
	EnvVisibleDevices = "NVIDIA_VISIBLE_DEVICES"
	// EnvGPUPortion is the share of the GPU, as a decimal ("0.5"); the name is
	// KAI-Scheduler compatible.
	EnvGPUPortion = "GPU_PORTION"
	// EnvGPUMemoryMiB is the memory the pod may use, in MiB: its gpu-memory, or
	// its portion of the GPU's memory.
	EnvGPUMemoryMiB = "GPUVC_GPU_MEMORY_MIB"
	// EnvReservation names the reservation pod holding the GPU.
	EnvReservation = "GPUVC_RESERVATION"
	// EnvCUDAMemoryLimit0 and EnvCUDASMLimit are HAMi-core's limits (its
	// libvgpu.so reads them when an image preloads it): the memory of device 0
	// ("39936m") and the compute share in percent ("50"). Set only for teams
	// with spec.gpuSharing.fractionLimits; tenants may not set them.
	EnvCUDAMemoryLimit0 = "CUDA_DEVICE_MEMORY_LIMIT_0"
	EnvCUDASMLimit      = "CUDA_DEVICE_SM_LIMIT"
)
