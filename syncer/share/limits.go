package share

import (
	"strconv"

	"github.com/gpuvc/gpuvc/api/contract"
	gpushare "github.com/gpuvc/gpuvc/gpu/share"
)

// FractionLimits asks for HAMi-core's limits in every share pod's environment
// (Team spec.gpuSharing.fractionLimits). Nothing in gpuvc enforces them: the
// pod's image must preload HAMi-core's libvgpu.so.
type FractionLimits struct {
	// ReserveMiB is subtracted from each pod's memory share, but never more
	// than half of it.
	ReserveMiB int64
}

// limitEnv adds CUDA_DEVICE_MEMORY_LIMIT_0 ("<MiB>m", the pod's memory share
// minus the reserve) and CUDA_DEVICE_SM_LIMIT (its share in percent, rounded
// up, at least 1) to env. The pod sees one GPU, so device index 0. The memory
// variable is left out when the GPU's memory is unknown and the pod asked for
// a fraction (no size to take a share of).
func limitEnv(env map[string]string, l *FractionLimits, memMiB int64, units int) {
	if l == nil {
		return
	}
	if memMiB > 0 {
		env[contract.EnvCUDAMemoryLimit0] = strconv.FormatInt(gpushare.MemoryLimitMiB(memMiB, l.ReserveMiB), 10) + "m"
	}
	env[contract.EnvCUDASMLimit] = strconv.Itoa(gpushare.SMLimitPercent(units))
}
