package syncer

import (
	"fmt"
	"slices"
	"strings"

	resourcev1 "k8s.io/api/resource/v1"
)

// A team's ResourceClaims and ResourceClaimTemplates (resource.k8s.io/v1),
// judged on CREATE (their spec is immutable afterwards) wherever they come
// from: vCluster's sync, the resource claim controller (a claim from a
// template), anyone with RBAC in the namespace. What a claim may ask for:
// devices of the team's DeviceClasses, each request counted (no
// allocationMode All), no adminAccess (the devices in use by others), no
// device tolerations (a device taint is the platform's), at most the team's
// per-pod GPU bound in all. A tenant's CEL selectors and constraints stay:
// the scheduler ANDs a request's selectors with its class's, so they only
// narrow the class's devices. Every firstAvailable subrequest is judged as a
// request is: the scheduler may pick any of them.

// ClaimInput is what the claim checks see; resolved by the handler, no I/O.
type ClaimInput struct {
	Policy *TeamPolicy
	// Kind is ResourceClaim or ResourceClaimTemplate, Name the object's name.
	Kind, Name string
	// Path is where Spec sits in the object: "spec" for a claim, "spec.spec"
	// for a template.
	Path string
	Spec *resourcev1.ResourceClaimSpec
	// DevicesUsed counts the team's whole GPUs and DRA devices now (its
	// ResourceQuota's status), on CREATE of a claim with a GPU ceiling; -1
	// when not read.
	DevicesUsed int64
}

// ClaimCheck refuses a claim or template that cannot be honoured.
type ClaimCheck func(in *ClaimInput) (reason, message string, denied bool)

// claimCreate judges a new claim or template.
var claimCreate = []ClaimCheck{checkClaimDRA, checkClaimClasses, checkClaimAllocationMode,
	checkClaimAdminAccess, checkClaimTolerations, checkClaimCount, checkClaimCeiling}

// RunClaimChecks applies every claim check to in.
func RunClaimChecks(in *ClaimInput) Result {
	var r Result
	for _, c := range claimCreate {
		if reason, message, denied := c(in); denied {
			r.Denials = append(r.Denials, Denial{reason, message})
		}
	}
	return r
}

// deviceRequest is one request of a claim, or one firstAvailable subrequest.
type deviceRequest struct {
	path        string // e.g. spec.devices.requests[0].firstAvailable[1]
	class       string
	mode        resourcev1.DeviceAllocationMode
	count       int64
	adminAccess bool
	tolerations int
}

// deviceRequests lists every request and subrequest of spec, with the field
// path of each under path.
func deviceRequests(path string, spec *resourcev1.ResourceClaimSpec) []deviceRequest {
	var out []deviceRequest
	for i, r := range spec.Devices.Requests {
		p := fmt.Sprintf("%s.devices.requests[%d]", path, i)
		if e := r.Exactly; e != nil {
			out = append(out, deviceRequest{path: p + ".exactly", class: e.DeviceClassName, mode: e.AllocationMode, count: e.Count,
				adminAccess: e.AdminAccess != nil && *e.AdminAccess, tolerations: len(e.Tolerations)})
		}
		for j, s := range r.FirstAvailable {
			out = append(out, deviceRequest{path: fmt.Sprintf("%s.firstAvailable[%d]", p, j), class: s.DeviceClassName, mode: s.AllocationMode,
				count: s.Count, tolerations: len(s.Tolerations)})
		}
	}
	return out
}

// requestCount is the devices a request (or subrequest) of ExactCount asks
// for; the API server defaults a missing count to 1.
func requestCount(count int64) int64 { return max(count, 1) }

// ClaimDevices is how many devices spec may be given at most: every request's
// count, the largest of a firstAvailable request's subrequests. Requests of
// allocationMode All are counted as one (they are refused).
func ClaimDevices(spec *resourcev1.ResourceClaimSpec) int64 {
	var n int64
	for _, r := range spec.Devices.Requests {
		if e := r.Exactly; e != nil {
			n += requestCount(e.Count)
		}
		var most int64
		for _, s := range r.FirstAvailable {
			most = max(most, requestCount(s.Count))
		}
		n += most
	}
	return n
}

func (in *ClaimInput) what() string { return in.Kind + " " + in.Name }

func checkClaimDRA(in *ClaimInput) (string, string, bool) {
	if in.Policy.DRA {
		return "", "", false
	}
	return ReasonResourceClaim, fmt.Sprintf(
		"%s asks for devices through Dynamic Resource Allocation but team %s does not use it (limit: the Team's spec.dra is unset; GPUs through nvidia.com/gpu, nvidia.com/mig-<profile> or the gpu-fraction / gpu-memory annotations); ask the platform team to set spec.dra, or delete the %s",
		in.what(), in.Policy.Team, in.Kind), true
}

// findings applies bad to every request and joins what it found.
func findings(in *ClaimInput, bad func(r deviceRequest) string) string {
	var found []string
	for _, r := range deviceRequests(in.Path, in.Spec) {
		if f := bad(r); f != "" {
			found = append(found, f)
		}
	}
	return strings.Join(found, ", ")
}

func checkClaimClasses(in *ClaimInput) (string, string, bool) {
	if !in.Policy.DRA {
		return "", "", false
	}
	found := findings(in, func(r deviceRequest) string {
		if slices.Contains(in.Policy.AllowedDeviceClasses, r.class) {
			return ""
		}
		return r.path + ".deviceClassName=" + r.class
	})
	if found == "" {
		return "", "", false
	}
	return ReasonDeviceClassNotAllowed, fmt.Sprintf(
		"%s: %s names a DeviceClass team %s may not use (limit: spec.dra.deviceClasses %s); use an allowed class",
		in.what(), found, in.Policy.Team, listOrNone(in.Policy.AllowedDeviceClasses)), true
}

func checkClaimAllocationMode(in *ClaimInput) (string, string, bool) {
	found := findings(in, func(r deviceRequest) string {
		if r.mode != resourcev1.DeviceAllocationModeAll {
			return ""
		}
		return r.path + ".allocationMode=All"
	})
	if found == "" {
		return "", "", false
	}
	return ReasonDeviceAllocationAll, fmt.Sprintf(
		"%s: %s asks for every matching device of a node, uncounted (limit: allocationMode ExactCount with a count); set count instead",
		in.what(), found), true
}

func checkClaimAdminAccess(in *ClaimInput) (string, string, bool) {
	found := findings(in, func(r deviceRequest) string {
		if !r.adminAccess {
			return ""
		}
		return r.path + ".adminAccess=true"
	})
	if found == "" {
		return "", "", false
	}
	return ReasonDeviceAdminAccess, fmt.Sprintf(
		"%s: %s would reach devices already allocated to other pods, other teams' included (limit: no adminAccess in team namespaces); remove it",
		in.what(), found), true
}

func checkClaimTolerations(in *ClaimInput) (string, string, bool) {
	found := findings(in, func(r deviceRequest) string {
		if r.tolerations == 0 {
			return ""
		}
		return fmt.Sprintf("%s.tolerations (%d)", r.path, r.tolerations)
	})
	if found == "" {
		return "", "", false
	}
	return ReasonDeviceToleration, fmt.Sprintf(
		"%s: %s tolerates device taints, which the platform sets to keep devices out of use (limit: no device tolerations in team namespaces); remove them",
		in.what(), found), true
}

func checkClaimCount(in *ClaimInput) (string, string, bool) {
	n := ClaimDevices(in.Spec)
	if n <= in.Policy.MaxGPUsPerPod {
		return "", "", false
	}
	return ReasonDeviceCountAboveLimit, fmt.Sprintf(
		"%s asks for up to %d devices (%s.devices.requests[*]: each count, the largest of a firstAvailable list) but team %s allows at most %d GPU devices per pod (limit: maxGPUsPerPod=%d); ask for fewer",
		in.what(), n, in.Path, in.Policy.Team, in.Policy.MaxGPUsPerPod, in.Policy.MaxGPUsPerPod), true
}

// checkClaimCeiling holds a new claim's devices and the team's whole GPUs and
// DRA devices already counted under the team's GPU ceiling. ResourceQuota
// holds each resource alone and admits after this webhook, so two claims
// created at once can both pass here: docs/dra.md says how far that goes.
func checkClaimCeiling(in *ClaimInput) (string, string, bool) {
	if in.Kind != KindResourceClaim || in.Policy.GPUCeiling <= 0 || in.DevicesUsed < 0 {
		return "", "", false
	}
	n := ClaimDevices(in.Spec)
	if in.DevicesUsed+n <= in.Policy.GPUCeiling {
		return "", "", false
	}
	return ReasonGPUCeiling, fmt.Sprintf(
		"%s asks for %d device(s) but team %s already holds %d whole GPUs and DRA devices together (limit: %d, spec.quota.gpus, for nvidia.com/gpu and DRA devices together); free some or ask the platform team to raise spec.quota.gpus",
		in.what(), n, in.Policy.Team, in.DevicesUsed, in.Policy.GPUCeiling), true
}
