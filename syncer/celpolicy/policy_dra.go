package celpolicy

import (
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	admissionv1ac "k8s.io/client-go/applyconfigurations/admissionregistration/v1"

	"github.com/gpuvc/gpuvc/api/contract"
)

// A spec.dra team's ResourceClaims and ResourceClaimTemplates reach its host
// namespace through vCluster (sync.toHost.resourceClaims and
// resourceClaimTemplates); the resource claim controller makes claims from
// templates there. The DRA fences repeat the webhook's claim checks
// (syncer/dra_claim.go) on CREATE — their spec is immutable — for every
// request and firstAvailable subrequest: a DeviceClass of the team's list, no
// allocationMode All, no adminAccess, no device tolerations, at most
// maxGPUsPerPod devices per claim. A tenant's CEL selectors are ANDed with
// the class's by the scheduler, so they only narrow. On a claim's status, no
// service account of the namespace (the team's vCluster syncer, which
// vCluster's Role lets update resourceclaims/status, nor its pods) may change
// the allocation or the reservations. What CEL cannot judge: a pod's claims
// all together (it cannot read the claims a pod names) and the team's GPU
// ceiling (it cannot read quota usage); the webhook does both, the
// ResourceQuota bounds each class.

// draVariables read the parameters and the claim spec at spec (object.spec
// or object.spec.spec), whose fields messages call path.
func draVariables(spec, path string) []variable {
	return []variable{
		{"create", `request.operation == "CREATE"`},
		{"team", `namespaceObject.metadata.?labels[?` + lit(contract.LabelTeam) + `].orValue(namespaceObject.metadata.name)`},
		{"dra", paramString(KeyDRA) + ` == "true"`},
		{"classes", paramList(KeyDeviceClasses)},
		{"maxGPUsRaw", paramString(KeyMaxGPUsPerPod)},
		{"maxGPUs", `variables.maxGPUsRaw.matches("^[0-9]{1,9}$") ? int(variables.maxGPUsRaw) : -1`},
		{"path", lit(path)},
		{"requests", `variables.create ? ` + spec + `.?devices.?requests.orValue([]) : []`},
		// Each request's devices: its count (1 when unset), the largest of a
		// firstAvailable list.
		{"counts", `variables.requests.map(r, has(r.exactly) ? ` + count("r.exactly") + ` : r.firstAvailable.map(s, ` + count("s") + `).max())`},
		{"devices", `variables.counts.sum()`},
		{"foreignClasses", findings(true, func(e string) string { return `!(` + e + `.deviceClassName in variables.classes)` },
			func(e, p string) string { return p + ` + ".deviceClassName=" + ` + e + `.deviceClassName` })},
		{"allDevices", findings(true, func(e string) string { return e + `.?allocationMode.orValue("ExactCount") == "All"` },
			func(_, p string) string { return p + ` + ".allocationMode=All"` })},
		{"adminAccess", findings(false, func(e string) string { return e + `.?adminAccess.orValue(false)` },
			func(_, p string) string { return p + ` + ".adminAccess=true"` })},
		{"tolerations", findings(true, func(e string) string { return `size(` + e + `.?tolerations.orValue([])) > 0` },
			func(_, p string) string { return p + ` + ".tolerations"` })},
		// A claim's status written by a service account of the namespace.
		{"tenantStatusWrite", `request.subResource == "status" && request.operation == "UPDATE" && ` +
			`request.userInfo.username.startsWith("system:serviceaccount:" + namespaceObject.metadata.name + ":")`},
		{"statusChanges", `variables.tenantStatusWrite ? ` +
			`((object.?status.?allocation.hasValue() != oldObject.?status.?allocation.hasValue() || ` +
			`(object.?status.?allocation.hasValue() && object.status.allocation != oldObject.status.allocation)) ? ["status.allocation"] : []) + ` +
			`((object.?status.?reservedFor.orValue([]) != oldObject.?status.?reservedFor.orValue([])) ? ["status.reservedFor"] : []) : []`},
	}
}

func count(e string) string {
	return `(` + e + `.?count.orValue(0) > 0 ? ` + e + `.count : 1)`
}

// findings is the CEL list of what every request (and, with subrequests, every
// firstAvailable subrequest) e meeting bad contributes to a message: text of
// e and the CEL expression of its field path.
func findings(subrequests bool, bad func(e string) string, text func(e, p string) string) string {
	req := `variables.path + ".devices.requests[" + string(i) + "]`
	out := `variables.requests.transformList(i, r, has(r.exactly) && ` + bad("r.exactly") + `, ` + text("r.exactly", req+`.exactly"`) + `)`
	if subrequests {
		out += ` + variables.requests.transformList(i, r, r.?firstAvailable.orValue([]).exists(s, ` + bad("s") + `), ` +
			`r.firstAvailable.transformList(j, s, ` + bad("s") + `, ` + text("s", req+`.firstAvailable[" + string(j) + "]"`) + `)).flatten()`
	}
	return `(` + out + `)`
}

// draChecks are the claim checks; status adds the status rule (claims only).
func draChecks(kind string, status bool) []check {
	what := lit(kind+" ") + ` + namespaceObject.metadata.name + "/" + object.metadata.?name.orValue(object.metadata.?generateName.orValue("") + "*")`
	cs := []check{
		{
			reason:  ReasonInvalidParams,
			expr:    `!variables.create || variables.maxGPUs >= 0`,
			message: "the namespace's ConfigMap " + ParamsName + " lacks a whole-number maxGPUsPerPod; every claim is refused until gpuvc rewrites it",
			messageCEL: lit(prefix(ReasonInvalidParams)+"ConfigMap ") + ` + namespaceObject.metadata.name + "/` + ParamsName + ` has ` + KeyMaxGPUsPerPod +
				`=\"" + variables.maxGPUsRaw + "\" (limit: a whole number); every claim of the namespace is refused until gpuvc rewrites it"`,
		},
		{
			reason:  ReasonResourceClaim,
			expr:    `!variables.create || variables.dra`,
			message: "the team does not use Dynamic Resource Allocation (limit: " + KeyDRA + " in " + ParamsName + ", the Team's spec.dra)",
			messageCEL: lit(prefix(ReasonResourceClaim)) + ` + ` + what + ` + " asks for devices through Dynamic Resource Allocation but team " + variables.team + ` +
				`" does not use it (limit: the Team's spec.dra is unset; GPUs through nvidia.com/gpu, nvidia.com/mig-<profile> or the gpu-fraction / gpu-memory annotations); ask the platform team to set spec.dra"`,
		},
		{
			reason:  ReasonDeviceClassNotAllowed,
			expr:    `!variables.create || !variables.dra || size(variables.foreignClasses) == 0`,
			message: "a request names a DeviceClass the team may not use (limit: " + KeyDeviceClasses + " in " + ParamsName + ")",
			messageCEL: lit(prefix(ReasonDeviceClassNotAllowed)) + ` + ` + what + ` + ": " + variables.foreignClasses.join(", ") + " names a DeviceClass team " + variables.team + ` +
				`" may not use (limit: spec.dra.deviceClasses " + ` + listOrNone("variables.classes") + ` + "); use an allowed class"`,
		},
		{
			reason:  ReasonDeviceAllocationAll,
			expr:    `!variables.create || size(variables.allDevices) == 0`,
			message: "allocationMode All asks for every matching device of a node, uncounted (limit: ExactCount with a count)",
			messageCEL: lit(prefix(ReasonDeviceAllocationAll)) + ` + ` + what + ` + ": " + variables.allDevices.join(", ") + ` +
				`" asks for every matching device of a node, uncounted (limit: allocationMode ExactCount with a count); set count instead"`,
		},
		{
			reason:  ReasonDeviceAdminAccess,
			expr:    `!variables.create || size(variables.adminAccess) == 0`,
			message: "adminAccess reaches devices allocated to others (limit: no adminAccess in team namespaces)",
			messageCEL: lit(prefix(ReasonDeviceAdminAccess)) + ` + ` + what + ` + ": " + variables.adminAccess.join(", ") + ` +
				`" would reach devices already allocated to other pods, other teams' included (limit: no adminAccess in team namespaces); remove it"`,
		},
		{
			reason:  ReasonDeviceToleration,
			expr:    `!variables.create || size(variables.tolerations) == 0`,
			message: "device tolerations reach devices the platform tainted (limit: no device tolerations in team namespaces)",
			messageCEL: lit(prefix(ReasonDeviceToleration)) + ` + ` + what + ` + ": " + variables.tolerations.join(", ") + ` +
				`" tolerates device taints, which the platform sets to keep devices out of use (limit: no device tolerations in team namespaces); remove them"`,
		},
		{
			reason:  ReasonDeviceCountAboveLimit,
			expr:    `!variables.create || variables.devices <= variables.maxGPUs`,
			message: "the claim asks for more devices than the team allows per pod (limit: " + KeyMaxGPUsPerPod + " in " + ParamsName + ")",
			messageCEL: lit(prefix(ReasonDeviceCountAboveLimit)) + ` + ` + what + ` + " asks for up to " + string(variables.devices) + " devices (" + variables.path + ` +
				`".devices.requests[*]: each count, the largest of a firstAvailable list) but team " + variables.team + " allows at most " + string(variables.maxGPUs) + ` +
				`" GPU devices per pod (limit: ` + KeyMaxGPUsPerPod + `=" + string(variables.maxGPUs) + "); ask for fewer"`,
		},
	}
	if status {
		cs = append(cs, check{
			reason:  ReasonClaimStatusProtected,
			expr:    `size(variables.statusChanges) == 0`,
			message: "a claim's allocation and reservations are written by the scheduler and the resource claim controller only",
			messageCEL: lit(prefix(ReasonClaimStatusProtected)) + ` + variables.statusChanges.join(" and ") + " of ResourceClaim " + namespaceObject.metadata.name + "/" + object.metadata.name + ` +
				`" written by " + request.userInfo.username + ", an identity of team " + variables.team + "'s namespace ` +
				`(limit: allocations and reservations are written by the scheduler and the resource claim controller only); a tenant cannot pick its devices"`,
		})
	}
	return cs
}

// draFence is the ValidatingAdmissionPolicy name on resource (claims also on
// their status), with the claim spec at spec.
func draFence(name, kind, resource, spec, path string) *admissionv1ac.ValidatingAdmissionPolicyApplyConfiguration {
	resources := []string{resource}
	status := resource == "resourceclaims"
	if status {
		resources = append(resources, resource+"/status")
	}
	s := admissionv1ac.ValidatingAdmissionPolicySpec().
		WithFailurePolicy(admissionregistrationv1.Fail).
		WithParamKind(admissionv1ac.ParamKind().WithAPIVersion("v1").WithKind("ConfigMap")).
		WithMatchConstraints(admissionv1ac.MatchResources().WithResourceRules(
			admissionv1ac.NamedRuleWithOperations().
				WithOperations(admissionregistrationv1.Create, admissionregistrationv1.Update).
				WithAPIGroups("resource.k8s.io").WithAPIVersions("v1").WithResources(resources...)))
	for _, v := range draVariables(spec, path) {
		s.WithVariables(admissionv1ac.Variable().WithName(v.name).WithExpression(v.expr))
	}
	for _, c := range draChecks(kind, status) {
		s.WithValidations(admissionv1ac.Validation().
			WithExpression(c.expr).
			WithMessage(prefix(c.reason) + c.message).
			WithMessageExpression(c.messageCEL).
			WithReason(metav1.StatusReasonForbidden))
	}
	return admissionv1ac.ValidatingAdmissionPolicy(name).WithLabels(labels()).WithSpec(s)
}

func claimFence() *admissionv1ac.ValidatingAdmissionPolicyApplyConfiguration {
	return draFence(ClaimFenceName, "ResourceClaim", "resourceclaims", "object.spec", "spec")
}

func templateFence() *admissionv1ac.ValidatingAdmissionPolicyApplyConfiguration {
	return draFence(TemplateFenceName, "ResourceClaimTemplate", "resourceclaimtemplates", "object.spec.spec", "spec.spec")
}

// draFenceBinding binds a DRA fence to every team namespace with the
// namespace's parameter ConfigMap; without it, claims are refused.
func draFenceBinding(name string) *admissionv1ac.ValidatingAdmissionPolicyBindingApplyConfiguration {
	return admissionv1ac.ValidatingAdmissionPolicyBinding(name).WithLabels(labels()).
		WithSpec(admissionv1ac.ValidatingAdmissionPolicyBindingSpec().
			WithPolicyName(name).
			WithParamRef(admissionv1ac.ParamRef().WithName(ParamsName).
				WithParameterNotFoundAction(admissionregistrationv1.DenyAction)).
			WithMatchResources(teamNamespaces()).
			WithValidationActions(admissionregistrationv1.Deny))
}
