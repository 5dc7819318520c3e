package celpolicy

import (
	"strconv"

	"github.com/gpuvc/gpuvc/api/contract"
)

// The team policy's rules: what the webhook decides from a TeamPolicy beyond
// pool, device count and security — scheduling settings, the MIG allow-list,
// fractions per team and their semantics — and DRA claims, which no layer
// hands out. Each rule is judged only when the parameters carry its key
// (PolicyParams writes all of them), so parameters of an older manager keep
// working.

func teamVariables() []variable {
	labelQueue := lit(contract.LabelKAIQueue)
	a := "variables.annotations"
	return []variable{
		{"migJudged", paramSet(KeyMIGProfiles)},
		{"migProfiles", paramList(KeyMIGProfiles)},
		{"fractionsJudged", paramSet(KeyFractions)},
		{"fractionsRaw", paramString(KeyFractions)},
		{"fractions", `variables.fractionsRaw == "true"`},
		{"gpuMemoryRaw", paramString(KeyGPUMemoryMiB)},
		// 0: no bound; -1: malformed (InvalidAdmissionParams).
		{"gpuMemory", `variables.gpuMemoryRaw == "" ? 0 : (variables.gpuMemoryRaw.matches("^[0-9]{1,9}$") ? int(variables.gpuMemoryRaw) : -1)`},
		{"schedulerJudged", paramSet(KeySchedulerName)},
		{"schedulerName", paramString(KeySchedulerName)},
		{"priorityJudged", paramSet(KeyPriorityClasses)},
		{"priorityClasses", paramList(KeyPriorityClasses)},
		{"runtimeJudged", paramSet(KeyRuntimeClasses)},
		{"runtimeClasses", paramList(KeyRuntimeClasses)},
		{"queueJudged", paramSet(KeyQueue)},
		{"queue", paramString(KeyQueue)},
		{"dra", paramString(KeyDRA) + ` == "true"`},
		{"podClaims", `object.spec.?resourceClaims.orValue([])`},

		// The control plane keeps the platform's scheduling settings.
		{"workloadCreate", `variables.create && !variables.controlPlane`},
		{"podScheduler", `object.spec.?schedulerName.orValue(` + lit(contract.DefaultSchedulerName) + `)`},
		{"podPriorityClass", `object.spec.?priorityClassName.orValue("")`},
		{"podRuntimeClass", `object.spec.?runtimeClassName.orValue("")`},
		{"hasQueue", labelQueue + ` in object.metadata.?labels.orValue({})`},
		{"queueLabel", `object.metadata.?labels[?` + labelQueue + `].orValue("")`},
		{"oldHasQueue", `!variables.create && ` + labelQueue + ` in oldObject.metadata.?labels.orValue({})`},
		{"oldQueueLabel", `variables.create ? "" : oldObject.metadata.?labels[?` + labelQueue + `].orValue("")`},

		{"foreignMIG", `variables.gpuNames.filter(n, n.startsWith(` + resourceMIG + `) && ` +
			`!(n.substring(` + strconv.Itoa(len(contract.ResourceMIGPrefix)) + `) in variables.migProfiles))`},
		{"shareProblems", `(` + annoFraction + ` in ` + a + ` && ` + annoMemory + ` in ` + a + ` ? ` +
			`["metadata.annotations sets both gpu-fraction and gpu-memory (" + ` + quoted(a+`[`+annoFraction+`]`) + ` + ", " + ` + quoted(a+`[`+annoMemory+`]`) +
			` + ") (limit: one of them); keep only one"] : []) + ` +
			`(` + annoDevices + ` in ` + a + ` && ` + a + `[` + annoDevices + `] != "1" ? ` +
			`["metadata.annotations[` + contract.AnnotationKAIFractionDevices + `]=" + ` + quoted(a+`[`+annoDevices+`]`) +
			` + " is not supported (limit: a share of 1 GPU); remove it, or request whole GPUs with ` + contract.ResourceGPU + `"] : []) + ` +
			`(variables.gpuMemory > 0 && ` + annoMemory + ` in ` + a + ` && variables.memoryOK && int(` + a + `[` + annoMemory + `]) >= variables.gpuMemory ? ` +
			`["metadata.annotations[gpu-memory]=" + ` + quoted(a+`[`+annoMemory+`]`) + ` + " MiB is not less than the " + string(variables.gpuMemory) + ` +
			`" MiB of one GPU of pool " + variables.pool + " (limit: below " + string(variables.gpuMemory) + " MiB); ask for less, or request ` +
			contract.ResourceGPU + `: 1 for a whole GPU"] : [])`},
	}
}

func teamChecks() []check {
	return []check{
		{
			reason:  ReasonSchedulerNotAllowed,
			expr:    `!variables.workloadCreate || !variables.schedulerJudged || variables.podScheduler == variables.schedulerName`,
			message: "spec.schedulerName names a scheduler the team policy does not use (limit: schedulerName in " + ParamsName + ")",
			messageCEL: lit(prefix(ReasonSchedulerNotAllowed)+"spec.schedulerName=") + ` + variables.podScheduler + " but pods of team " + variables.team + ` +
				`" are scheduled by " + variables.schedulerName + " (limit: ` + KeySchedulerName + `=" + variables.schedulerName + ` +
				`"): another scheduler could ignore the pools' taints and the team's quota; remove spec.schedulerName"`,
		},
		{
			reason:  ReasonPriorityClassNotAllowed,
			expr:    `!variables.workloadCreate || !variables.priorityJudged || variables.podPriorityClass == "" || variables.podPriorityClass in variables.priorityClasses`,
			message: "spec.priorityClassName is not allowed for the team (limit: priorityClasses in " + ParamsName + ")",
			messageCEL: lit(prefix(ReasonPriorityClassNotAllowed)+"spec.priorityClassName=") + ` + variables.podPriorityClass + " is not allowed for team " + variables.team + ` +
				`" (limit: ` + KeyPriorityClasses + `=" + ` + listOrNone("variables.priorityClasses") + ` + "): it could preempt or outrank other teams' pods; remove it or use an allowed class"`,
		},
		{
			reason:  ReasonRuntimeClassNotAllowed,
			expr:    `!variables.workloadCreate || !variables.runtimeJudged || variables.podRuntimeClass == "" || variables.podRuntimeClass in variables.runtimeClasses`,
			message: "spec.runtimeClassName is not allowed for the team (limit: runtimeClasses in " + ParamsName + ")",
			messageCEL: lit(prefix(ReasonRuntimeClassNotAllowed)+"spec.runtimeClassName=") + ` + variables.podRuntimeClass + " is not allowed for team " + variables.team + ` +
				`" (limit: ` + KeyRuntimeClasses + `=" + ` + listOrNone("variables.runtimeClasses") + ` + "): a runtime class changes how the node exposes devices; remove it or use an allowed class"`,
		},
		{
			reason: ReasonQueueNotAllowed,
			expr: `!variables.queueJudged || (variables.create ? ` +
				`(variables.controlPlane || !variables.hasQueue || (variables.queue != "" && variables.queueLabel == variables.queue)) : ` +
				`(variables.hasQueue == variables.oldHasQueue && variables.queueLabel == variables.oldQueueLabel))`,
			message: "the label " + contract.LabelKAIQueue + " names a queue the team policy does not use (limit: queue in " + ParamsName + ")",
			messageCEL: lit(prefix(ReasonQueueNotAllowed)+"metadata.labels["+contract.LabelKAIQueue+"]=") + ` + (variables.hasQueue ? variables.queueLabel : "(removed)") + ` +
				`(variables.create ? " but team " + variables.team + (variables.queue == "" ? " has no scheduler queue" : "'s pods use queue " + variables.queue) + ` +
				`" (limit: ` + KeyQueue + `=" + (variables.queue == "" ? "(none)" : variables.queue) + "); remove the label" : ` +
				`" changes the queue gpuvc set at creation (" + (variables.oldHasQueue ? variables.oldQueueLabel : "none") + ") (limit: unchanged after creation)")`,
		},
		{
			reason:  ReasonMIGProfileNotAllowed,
			expr:    `!variables.migJudged || size(variables.foreignMIG) == 0`,
			message: "the pod asks for a MIG profile the team may not use (limit: migProfiles in " + ParamsName + ")",
			messageCEL: lit(prefix(ReasonMIGProfileNotAllowed)+"resources.limits[") + ` + variables.foreignMIG.join(", ") + ` +
				`"] in spec.containers[*]/spec.initContainers[*] asks for MIG profile(s) team " + variables.team + " may not use ` +
				`(limit: ` + KeyMIGProfiles + `=" + ` + listOrNone("variables.migProfiles") + ` + "); request an allowed profile"`,
		},
		{
			reason: ReasonResourceClaim,
			expr: `!variables.create || size(variables.podClaims) == 0 || ` +
				`(variables.dra && !variables.controlPlane && ` + paramString(KeyKueueQueue) + ` == "")`,
			message: "spec.resourceClaims asks for devices through Dynamic Resource Allocation, which the team may not use " +
				"(limit: claims only for teams with spec.dra and without spec.queueing; GPUs through nvidia.com/gpu, nvidia.com/mig-<profile> or the gpu-fraction/gpu-memory annotations)",
			messageCEL: lit(prefix(ReasonResourceClaim)+"spec.resourceClaims [") + ` + variables.podClaims.map(r, r.name).join(", ") + "] " + ` +
				`(variables.controlPlane ? "on the vCluster control plane (limit: no devices for control-plane pods)" : ` +
				`(variables.dra ? "of a team that queues in Kueue, which counts no DRA devices in v0.17.0 (limit: claims only for teams without spec.queueing); request ` + contract.ResourceGPU + ` instead" : ` +
				`"asks for devices through Dynamic Resource Allocation, outside the team's GPU quota and pool fence ` +
				`(limit: GPUs through ` + contract.ResourceGPU + `, ` + contract.ResourceMIGPrefix + `<profile> or the gpu-fraction / gpu-memory annotations; ` +
				`claims only for teams with spec.dra); remove the claims, or ask the platform team to set spec.dra"))`,
		},
		{
			reason:  ReasonFractionsDisabled,
			expr:    `!variables.create || !variables.fractionsJudged || variables.fractions || !variables.share`,
			message: "the pod asks for a GPU share but the team has GPU sharing disabled (limit: fractions in " + ParamsName + ")",
			messageCEL: lit(prefix(ReasonFractionsDisabled)+"metadata.annotations asks for a GPU share (gpu-fraction / gpu-memory) but team ") + ` + variables.team + ` +
				`" has GPU sharing disabled (limit: ` + KeyFractions + `=false: whole GPUs or MIG); request ` + contract.ResourceGPU +
				` or a MIG profile, or ask the platform team to enable fractions"`,
		},
		{
			reason:  ReasonShareWithGPUResource,
			expr:    `!variables.create || !variables.share || size(variables.nvidiaNames) == 0`,
			message: "a GPU share together with a GPU resource (limit: a share or devices, not both)",
			messageCEL: lit(prefix(ReasonShareWithGPUResource)+"metadata.annotations asks for a GPU share together with resources.limits[") + ` + variables.nvidiaNames.join(", ") + ` +
				`"] (limit: a share or devices, not both); remove the annotation or the resource"`,
		},
		{
			reason:     ReasonInvalidGPUShare,
			expr:       `!variables.create || size(variables.shareProblems) == 0`,
			message:    "the GPU share annotations cannot be honoured (limit: one of gpu-fraction / gpu-memory, one GPU, below one GPU's memory)",
			messageCEL: lit(prefix(ReasonInvalidGPUShare)) + ` + variables.shareProblems.join("; ")`,
		},
	}
}
