package syncer

import (
	"fmt"
	"strings"

	"github.com/gpuvc/gpuvc/api/contract"
)

// Dynamic Resource Allocation: a pod can ask a DRA driver for devices through
// spec.resourceClaims. Those devices are outside the team's GPU quota
// (requests.nvidia.com/*), its per-pod maximum and the share controller, so
// gpuvc hands out GPUs only through device-plugin resources and share
// annotations and refuses claims in team namespaces. The claims are immutable
// after creation.

func checkResourceClaims(in *Input) (string, string, bool) {
	claims := in.Pod.Spec.ResourceClaims
	if len(claims) == 0 {
		return "", "", false
	}
	names := make([]string, len(claims))
	for i, c := range claims {
		names[i] = c.Name
	}
	return ReasonResourceClaim, fmt.Sprintf(
		"spec.resourceClaims [%s] asks for devices through Dynamic Resource Allocation, outside team %s's GPU quota and pool fence (limit: GPUs through %s, %s<profile> or the gpu-fraction / gpu-memory annotations); remove the claims",
		strings.Join(names, ", "), in.Policy.Team, contract.ResourceGPU, contract.ResourceMIGPrefix), true
}
