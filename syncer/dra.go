package syncer

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"

	"github.com/gpuvc/gpuvc/api/contract"
)

// Dynamic Resource Allocation: a pod asks a DRA driver for devices through
// spec.resourceClaims, each naming a ResourceClaim or a ResourceClaimTemplate
// of the pod's own namespace (the field has no namespace: the API server
// resolves both there). Teams without spec.dra may use none: their devices
// come only through device-plugin resources and share annotations. A spec.dra
// team's pod may name claims the claim checks admit (dra_claim.go), their
// devices and its device-plugin GPUs together within the team's per-pod
// bound; the claims' devices come from the pool's nodes because the pod is
// pinned there and the scheduler allocates node-local devices on the node the
// pod lands on. The control plane uses none.

// Kinds of the DRA objects the webhook judges.
const (
	KindResourceClaim         = "ResourceClaim"
	KindResourceClaimTemplate = "ResourceClaimTemplate"
)

// PodClaim is one entry of a pod's spec.resourceClaims, resolved by the
// handler: what it names and that object's claim spec (nil: not found).
type PodClaim struct {
	Name string // spec.resourceClaims[].name
	// Kind is KindResourceClaim or KindResourceClaimTemplate, Object its name.
	Kind, Object string
	Spec         *resourcev1.ResourceClaimSpec
}

// podClaimRefs lists what the pod's claims name, unresolved.
func podClaimRefs(pod *corev1.Pod) []PodClaim {
	out := make([]PodClaim, 0, len(pod.Spec.ResourceClaims))
	for _, c := range pod.Spec.ResourceClaims {
		pc := PodClaim{Name: c.Name}
		switch {
		case c.ResourceClaimName != nil:
			pc.Kind, pc.Object = KindResourceClaim, *c.ResourceClaimName
		case c.ResourceClaimTemplateName != nil:
			pc.Kind, pc.Object = KindResourceClaimTemplate, *c.ResourceClaimTemplateName
		}
		out = append(out, pc)
	}
	return out
}

func checkResourceClaims(in *Input) (string, string, bool) {
	claims := in.Pod.Spec.ResourceClaims
	if len(claims) == 0 {
		return "", "", false
	}
	names := make([]string, len(claims))
	for i, c := range claims {
		names[i] = c.Name
	}
	switch {
	case in.Role == contract.RoleControlPlane:
		return ReasonResourceClaim, fmt.Sprintf(
			"spec.resourceClaims [%s] on the vCluster control plane of team %s (limit: no devices for control-plane pods); remove them from the control plane's values",
			strings.Join(names, ", "), in.Policy.Team), true
	case !in.Policy.DRA:
		return ReasonResourceClaim, fmt.Sprintf(
			"spec.resourceClaims [%s] asks for devices through Dynamic Resource Allocation, outside team %s's GPU quota and pool fence (limit: GPUs through %s, %s<profile> or the gpu-fraction / gpu-memory annotations; claims only for teams with spec.dra); remove the claims, or ask the platform team to set spec.dra",
			strings.Join(names, ", "), in.Policy.Team, contract.ResourceGPU, contract.ResourceMIGPrefix), true
	case in.Policy.KueueQueue != "":
		return ReasonResourceClaim, fmt.Sprintf(
			"spec.resourceClaims [%s]: team %s queues its GPU pods in Kueue, and Kueue v0.17.0 counts no DRA devices (limit: DRA claims only for teams without spec.queueing); request %s instead",
			strings.Join(names, ", "), in.Policy.Team, contract.ResourceGPU), true
	}
	return "", "", false
}

// checkPodClaims judges what a spec.dra team's pod's claims ask for, as the
// claim checks judge the claims themselves (a claim made before the team's
// classes changed is judged again), and the pod's devices all together.
func checkPodClaims(in *Input) (string, string, bool) {
	if len(in.Claims) == 0 || !in.Policy.DRA || in.Role == contract.RoleControlPlane {
		return "", "", false
	}
	var dra int64
	var parts []string
	for i, c := range in.Claims {
		field := fmt.Sprintf("spec.resourceClaims[%d] (%s)", i, c.Name)
		if c.Spec == nil {
			return ReasonClaimNotFound, fmt.Sprintf(
				"%s names %s %s, which is not in namespace %s (limit: a pod's claims come from its own namespace, judged before the pod); create the %s first (vCluster retries the pod)",
				field, c.Kind, c.Object, in.Pod.Namespace, c.Kind), true
		}
		path := "spec"
		if c.Kind == KindResourceClaimTemplate {
			path = "spec.spec"
		}
		ci := &ClaimInput{Policy: in.Policy, Kind: c.Kind, Name: c.Object, Path: path, Spec: c.Spec, DevicesUsed: -1}
		for _, check := range []ClaimCheck{checkClaimClasses, checkClaimAllocationMode, checkClaimAdminAccess, checkClaimTolerations} {
			if reason, message, denied := check(ci); denied {
				return reason, field + " names " + message, true
			}
		}
		n := ClaimDevices(c.Spec)
		dra += n
		parts = append(parts, fmt.Sprintf("%s: %d", field, n))
	}
	gpus := totalDevices(podDevices(in.Pod))
	if gpus+dra <= in.Policy.MaxGPUsPerPod {
		return "", "", false
	}
	return ReasonGPUCountAboveLimit, fmt.Sprintf(
		"the pod holds %d GPU device(s) through resources.limits and up to %d through its claims (%s) but team %s allows at most %d per pod (limit: maxGPUsPerPod=%d, device-plugin GPUs and DRA devices together); ask for fewer or split the work across pods",
		gpus, dra, strings.Join(parts, ", "), in.Policy.Team, in.Policy.MaxGPUsPerPod, in.Policy.MaxGPUsPerPod), true
}

// checkPodCeiling holds a spec.dra team's new pod under the team's GPU
// ceiling: its whole GPUs and the devices of the claims its templates will
// make, with the whole GPUs and DRA devices the team holds. A named claim is
// counted already (ResourceQuota counts claims when they are created).
func checkPodCeiling(in *Input) (string, string, bool) {
	if !in.Policy.DRA || in.Policy.GPUCeiling <= 0 || in.DevicesUsed < 0 || in.Role == contract.RoleControlPlane {
		return "", "", false
	}
	want := podDevices(in.Pod)[contract.ResourceGPU]
	for _, c := range in.Claims {
		if c.Kind == KindResourceClaimTemplate && c.Spec != nil {
			want += ClaimDevices(c.Spec)
		}
	}
	if want == 0 || in.DevicesUsed+want <= in.Policy.GPUCeiling {
		return "", "", false
	}
	return ReasonGPUCeiling, fmt.Sprintf(
		"the pod asks for %d whole GPU(s) and DRA device(s) (resources.limits[%s] and its claim templates) but team %s already holds %d (limit: %d, spec.quota.gpus, for %s and DRA devices together); wait for pods to finish or ask the platform team to raise spec.quota.gpus",
		want, contract.ResourceGPU, in.Policy.Team, in.DevicesUsed, in.Policy.GPUCeiling, contract.ResourceGPU), true
}
