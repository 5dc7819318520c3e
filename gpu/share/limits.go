package share

// The figures a fractional pod's HAMi-core limits are made of (Team
// spec.gpuSharing.fractionLimits; syncer/share puts them in the pod's
// environment, gpu-check shows them for a real GPU).

// ShareMiB is a share of units of a GPU with gpuMiB of memory, rounded down.
func ShareMiB(gpuMiB int64, units int) int64 { return gpuMiB * int64(units) / UnitsPerGPU }

// MemoryLimitMiB is a pod's memory limit: its share minus reserveMiB (what the
// driver and the CUDA context take outside the limiter's count), but never
// less than half the share.
func MemoryLimitMiB(shareMiB, reserveMiB int64) int64 {
	return max(shareMiB-max(reserveMiB, 0), shareMiB-shareMiB/2)
}

// SMLimitPercent is a share of units in percent of the GPU's compute, rounded
// up, 1 to 100.
func SMLimitPercent(units int) int {
	pct := (units*100 + UnitsPerGPU - 1) / UnitsPerGPU
	return min(max(pct, 1), 100)
}
