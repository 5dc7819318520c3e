package syncer

import (
	"fmt"
	"strings"

	"github.com/gpuvc/gpuvc/api/contract"
)

// isGPULimitEnv reports HAMi-core's limit variables: CUDA_DEVICE_MEMORY_LIMIT,
// CUDA_DEVICE_MEMORY_LIMIT_<i>, CUDA_DEVICE_SM_LIMIT.
func isGPULimitEnv(name string) bool {
	return name == contract.EnvCUDASMLimit || name == "CUDA_DEVICE_MEMORY_LIMIT" ||
		strings.HasPrefix(name, "CUDA_DEVICE_MEMORY_LIMIT_")
}

// checkGPULimitEnv refuses a fractional pod that sets HAMi-core's limits
// itself: gpuvc puts them in the pod's share ConfigMap (teams with
// spec.gpuSharing.fractionLimits), and a container's own env would override
// that envFrom.
func checkGPULimitEnv(in *Input) (string, string, bool) {
	if !hasShareAnnotations(in.Pod) {
		return "", "", false
	}
	for _, c := range allContainers(in.Pod) {
		for _, e := range c.env {
			if isGPULimitEnv(e.Name) {
				return ReasonGPULimitEnv, fmt.Sprintf(
					"%s.env[%s]=%q is not allowed on a fractional pod (limit: gpuvc sets the GPU memory and compute limits of a share): remove it; the team's fractionLimits decide them",
					c.path, e.Name, e.Value), true
			}
		}
	}
	return "", "", false
}
