package v1alpha1

// Fraction limits: HAMi-core's in-container limiter (libvgpu.so) reads
// CUDA_DEVICE_MEMORY_LIMIT_<i> and CUDA_DEVICE_SM_LIMIT from the environment.
// gpuvc only sets them; a pod's image must preload libvgpu.so for anything to
// enforce them (docs/share.md, "Memory-limited fractions").

// DefaultFractionReserveMiB is subtracted from every fractional pod's memory
// limit unless reserveMiB says otherwise, so the limits of pods filling a GPU
// fit in what it can allocate. Measured on a real H200 by gpu-check
// (docs/gpu.md): the driver keeps 616 MiB of the GPU for itself and a PyTorch
// process holds 518 MiB beyond its own allocations; two 0.5 pods need
// 616/2 + 518 = 826 MiB each. 256 (the earlier guess) let two 0.5 limits
// add up to 103 MiB more than the H200 can allocate.
const DefaultFractionReserveMiB = 1024

// MaxFractionReserveMiB bounds reserveMiB.
const MaxFractionReserveMiB = 16384

// FractionLimits puts a memory and compute limit in every fractional pod's
// environment, for HAMi-core's libvgpu to enforce.
//
// +kubebuilder:validation:XValidation:rule="!has(self.reserveMiB) || (self.reserveMiB >= 0 && self.reserveMiB <= 16384)",message="spec.gpuSharing.fractionLimits.reserveMiB: must be between 0 and 16384 MiB"
type FractionLimits struct {
	// Enabled gives each fractional pod CUDA_DEVICE_MEMORY_LIMIT_0 (its share of
	// the GPU's memory minus reserveMiB, e.g. "39936m") and CUDA_DEVICE_SM_LIMIT
	// (its share in percent). Enforced only in images that preload HAMi-core's
	// libvgpu.so.
	// +optional
	Enabled bool `json:"enabled,omitempty"`

	// ReserveMiB is subtracted from every pod's memory limit. Default 1024
	// (the driver's own reserve and a CUDA context, measured on an H200).
	// +optional
	ReserveMiB *int32 `json:"reserveMiB,omitempty"`
}

// EffectiveReserveMiB is reserveMiB or its default.
func (l *FractionLimits) EffectiveReserveMiB() int64 {
	if l == nil || l.ReserveMiB == nil {
		return DefaultFractionReserveMiB
	}
	return int64(*l.ReserveMiB)
}
