package v1alpha1

// Fraction limits: HAMi-core's in-container limiter (libvgpu.so) reads
// CUDA_DEVICE_MEMORY_LIMIT_<i> and CUDA_DEVICE_SM_LIMIT from the environment.
// gpuvc only sets them; a pod's image must preload libvgpu.so for anything to
// enforce them (docs/share.md, "Memory-limited fractions").

// DefaultFractionReserveMiB is subtracted from every fractional pod's memory
// limit unless reserveMiB says otherwise: room for what the limiter does not
// count (driver and CUDA context overhead outside intercepted allocations), so
// the limits of pods filling a GPU stay below its memory.
const DefaultFractionReserveMiB = 256

// MaxFractionReserveMiB bounds reserveMiB.
const MaxFractionReserveMiB = 16384

// FractionLimits puts a memory and compute limit in every fractional pod's
// environment, for HAMi-core's libvgpu to enforce.
//
// +kubebuilder:validation:XValidation:rule="!has(self.reserveMiB) || (self.reserveMiB >= 0 && self.reserveMiB <= 16384)",message="spec.gpuSharing.fractionLimits.reserveMiB: must be between 0 and 16384 MiB"
type FractionLimits struct {
	// Enabled gives each fractional pod CUDA_DEVICE_MEMORY_LIMIT_0 (its share of
	// the GPU's memory minus reserveMiB, e.g. "40704m") and CUDA_DEVICE_SM_LIMIT
	// (its share in percent). Enforced only in images that preload HAMi-core's
	// libvgpu.so.
	// +optional
	Enabled bool `json:"enabled,omitempty"`

	// ReserveMiB is subtracted from every pod's memory limit. Default 256.
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
