package celpolicy

import (
	"strconv"

	corev1 "k8s.io/api/core/v1"

	"github.com/gpuvc/gpuvc/api/contract"
	"github.com/gpuvc/gpuvc/syncer"
)

// The families of issue 22, as the webhook decides them (docs/syncer.md,
// "Tenant escapes by family"): where the webhook removes a member, the fence
// refuses it, so with the webhook gone nothing outside the family is admitted.
// Tolerations: only the pool's, Kubernetes' not-ready/unreachable NoExecute for
// at most 300 s, and the team's list. Identities: no workload as the control
// plane's or the reservation account. Kueue: the queue and priority class the
// team policy gives, no prebuilt workload. Gates: gpuvc's only where gpuvc
// holds the pod. Node affinity: a required one must reach the pool. A
// ConfigMap's or Secret's content is out of reach of CEL (envFrom device
// variables are the webhook's and the node fence's).

func escapeVariables() []variable {
	pool := lit(contract.LabelPool)
	nodeProblem := litList([]string{corev1.TaintNodeNotReady, corev1.TaintNodeUnreachable})
	affinity := func(obj string) string {
		return obj + `.spec.?affinity.?nodeAffinity.?requiredDuringSchedulingIgnoredDuringExecution.?nodeSelectorTerms.orValue([])`
	}
	return []variable{
		// Tolerations.
		{"tolerationsJudged", paramSet(KeyTolerations)},
		{"allowedTolerations", paramList(KeyTolerations)},
		{"disallowedTolerations", `variables.newTolerations.filter(t, !(t.?key.orValue("") == ` + pool + ` ? ` +
			`(t.?operator.orValue("Equal") in ["Equal", ""] && t.?value.orValue("") == variables.allowedPool && t.?effect.orValue("") in ["NoSchedule", ""]) : ` +
			`(t.?key.orValue("") != "" && !t.key.startsWith(` + lit(contract.ReservedPrefix) + `) && (` +
			`(t.key in ` + nodeProblem + ` && t.?effect.orValue("") == "NoExecute" && t.?tolerationSeconds.hasValue() && ` +
			`t.tolerationSeconds >= 0 && t.tolerationSeconds <= ` + strconv.Itoa(syncer.MaxNodeProblemTolerationSeconds) + ` && ` +
			`(t.?operator.orValue("Equal") == "Exists" || t.?value.orValue("") == "")) || ` +
			`(t.key + "|" + (t.?operator.orValue("") == "" ? "Equal" : t.operator) + "|" + t.?value.orValue("") + "|" + t.?effect.orValue("")) in variables.allowedTolerations))))`},
		{"refusedTolerations", `variables.tolerationsJudged ? variables.disallowedTolerations : variables.foreignTolerations`},

		// Identities.
		{"serviceAccount", `object.spec.?serviceAccountName.orValue("")`},

		// Kueue.
		{"kueueQueueJudged", paramSet(KeyKueueQueue)},
		{"kueueQueue", paramString(KeyKueueQueue)},
		{"kueuePriorityJudged", paramSet(KeyKueuePriorityClasses)},
		{"kueuePriorityClasses", paramList(KeyKueuePriorityClasses)},
		{"hasKueueQueue", lit(contract.LabelKueueQueueName) + ` in variables.labels`},
		{"kueueQueueLabel", `variables.labels[?` + lit(contract.LabelKueueQueueName) + `].orValue("")`},
		{"kueuePriority", `variables.labels[?` + lit(contract.LabelKueuePriorityClass) + `].orValue("")`},
		// UPDATE: Kueue labels that changed.
		{"changedKueueLabels", litList([]string{contract.LabelKueueQueueName, contract.LabelKueuePriorityClass, contract.LabelKueuePrebuiltWorkload}) +
			`.filter(k, (k in variables.labels) != (k in variables.oldLabels) || variables.labels[?k].orValue("") != variables.oldLabels[?k].orValue(""))`},

		// Gates.
		{"gates", `object.spec.?schedulingGates.orValue([]).map(g, g.name)`},
		{"foreignGates", `variables.create ? variables.gates.filter(n, ` +
			`(n == ` + lit(contract.GateGPUShare) + ` && !(variables.share && !variables.controlPlane)) || ` +
			`(n == ` + lit(contract.KueueAdmissionGate) + ` && !(variables.hasKueueQueue && !variables.controlPlane))) : []`},

		// Required node affinity (pool label only: node names cannot be
		// resolved in CEL).
		{"affinityTerms", affinity("object")},
		{"affinityChanged", `variables.create || ` + affinity("object") + ` != ` + affinity("oldObject")},
		{"affinityReachesPool", `size(variables.affinityTerms) == 0 || variables.affinityTerms.exists(t, ` +
			`t.?matchExpressions.orValue([]).all(r, r.key != ` + pool + ` || ` +
			`(r.operator == "In" && variables.allowedPool in r.?values.orValue([])) || ` +
			`(r.operator == "NotIn" && !(variables.allowedPool in r.?values.orValue([]))) || r.operator == "Exists"))`},
	}
}

func escapeChecks() []check {
	describeToleration := `(t.?key.orValue("") == "" ? "*" : t.key) + " " + t.?operator.orValue("Equal") + ` +
		`(t.?value.orValue("") != "" ? " " + t.value : "") + (t.?effect.orValue("") != "" ? ":" + t.effect : "") + ` +
		`(t.?tolerationSeconds.hasValue() ? " for " + string(t.tolerationSeconds) + " s" : "")`
	return []check{
		{
			reason: ReasonTolerationOutsidePool,
			expr:   `size(variables.refusedTolerations) == 0`,
			message: "spec.tolerations tolerate taints the platform keeps pods off with (limit: the pool's toleration, " +
				"not-ready/unreachable NoExecute for at most 300 s, the team's allowed tolerations)",
			messageCEL: lit(prefix(ReasonTolerationOutsidePool)+"spec.tolerations [") + ` + variables.refusedTolerations.map(t, ` + describeToleration + `).join(", ") + ` +
				`"] would let the pod onto nodes the platform keeps pods off (other pools, cordoned nodes, nodes with a failing GPU or an unsafe runtime) ` +
				`(limit: ` + contract.LabelPool + ` Equal " + variables.allowedPool + ":NoSchedule, ` + corev1.TaintNodeNotReady + ` and ` + corev1.TaintNodeUnreachable +
				` NoExecute for at most ` + strconv.Itoa(syncer.MaxNodeProblemTolerationSeconds) + ` s, and the team's spec.placement.allowedTolerations: " + ` +
				listOrNone("variables.allowedTolerations") + ` + "); remove them, or ask the platform team to allow them"`,
		},
		{
			reason: ReasonReservedServiceAccount,
			expr: `!variables.create || ((variables.serviceAccount != ` + lit(contract.ReserveServiceAccount) + ` || variables.trusted) && ` +
				`(variables.controlPlaneName == "" || variables.controlPlane || variables.serviceAccount != "vc-" + variables.controlPlaneName))`,
			message: "spec.serviceAccountName is a platform identity of the team namespace (limit: workload pods run as vc-workload-<vcluster> or default)",
			messageCEL: lit(prefix(ReasonReservedServiceAccount)+"spec.serviceAccountName=") + ` + variables.serviceAccount + ` +
				`(variables.serviceAccount == ` + lit(contract.ReserveServiceAccount) + ` ? " is reserved for gpuvc's GPU reservation pods" : ` +
				`" is the identity of team " + variables.team + "'s vCluster control plane, with its rights on the host namespace") + ` +
				`" (limit: workload pods run as vc-workload-" + variables.controlPlaneName + " or default); remove spec.serviceAccountName"`,
		},
		{
			reason: ReasonKueueQueueNotAllowed,
			expr: `variables.create ? (!variables.kueueQueueJudged || !variables.workloadCreate || ` +
				`(variables.kueueQueue != "" && variables.gpuDevices > 0 ? variables.kueueQueueLabel == variables.kueueQueue : !variables.hasKueueQueue)) : ` +
				`size(variables.changedKueueLabels) == 0`,
			message: "the Kueue labels are the team policy's (limit: kueue.x-k8s.io/queue-name on a queueing team's GPU pods only, unchanged after creation)",
			messageCEL: `variables.create ? ` + lit(prefix(ReasonKueueQueueNotAllowed)+"metadata.labels["+contract.LabelKueueQueueName+"]=") +
				` + (variables.hasKueueQueue ? variables.kueueQueueLabel : "(unset)") + " but " + ` +
				`(variables.kueueQueue == "" ? "team " + variables.team + " does not queue" : (variables.gpuDevices > 0 ? "GPU pods of team " + variables.team + " wait in queue " + variables.kueueQueue : "only GPU pods wait in Kueue")) + ` +
				`" (limit: ` + KeyKueueQueue + `=" + (variables.kueueQueue == "" ? "(none)" : variables.kueueQueue) + ", GPU pods only); gpuvc's webhook sets it, so it is not running for this namespace: retry later or tell the platform team" : ` +
				lit(prefix(ReasonKueueQueueNotAllowed)+"metadata.labels ") + ` + variables.changedKueueLabels.map(k, "[" + k + "]=" + variables.labels[?k].orValue("(removed)")).join(", ") + ` +
				`" changes what was decided at creation (limit: Kueue's queue, priority class and workload are unchanged after creation); keep them"`,
		},
		{
			reason: ReasonKueuePriorityNotAllowed,
			expr: `!variables.create || ((!variables.kueuePriorityJudged || !(` + lit(contract.LabelKueuePriorityClass) + ` in variables.labels) || ` +
				`(variables.hasKueueQueue && variables.kueuePriority in variables.kueuePriorityClasses)) && ` +
				`!(` + lit(contract.LabelKueuePrebuiltWorkload) + ` in variables.labels))`,
			message: "a Kueue priority class or prebuilt workload the team policy does not give (limit: kueuePriorityClasses in " + ParamsName + ")",
			messageCEL: `(` + lit(contract.LabelKueuePrebuiltWorkload) + ` in variables.labels ? ` +
				lit(prefix(ReasonKueuePriorityNotAllowed)+"metadata.labels["+contract.LabelKueuePrebuiltWorkload+"]=") + ` + variables.labels[` + lit(contract.LabelKueuePrebuiltWorkload) + `] + ` +
				`" would attach the pod to a Workload gpuvc did not size (limit: no prebuilt workloads); remove the label" : ` +
				lit(prefix(ReasonKueuePriorityNotAllowed)+"metadata.labels["+contract.LabelKueuePriorityClass+"]=") + ` + variables.kueuePriority + ` +
				`" would set the priority of the pod's Kueue workload in its cohort (limit: team " + variables.team + " may name ` +
				KeyKueuePriorityClasses + `=" + ` + listOrNone("variables.kueuePriorityClasses") + ` + ", on GPU pods that queue); ` +
				`remove the label or ask the platform team to add the class to spec.queueing.priorityClasses")`,
		},
		{
			reason:  ReasonGateNotAllowed,
			expr:    `size(variables.foreignGates) == 0`,
			message: "gpuvc's scheduling gates are gpuvc's alone (limit: the share gate on share pods, Kueue's gate on queued GPU pods)",
			messageCEL: lit(prefix(ReasonGateNotAllowed)+"spec.schedulingGates [") + ` + variables.foreignGates.join(", ") + ` +
				`"] are gpuvc's gates (limit: ` + contract.GateGPUShare + ` only on a pod with a gpu-fraction / gpu-memory annotation, ` +
				contract.KueueAdmissionGate + ` only on a GPU pod labelled with the team's Kueue queue); remove them: gpuvc gates the pod itself"`,
		},
		{
			reason: ReasonAffinityOutsidePool,
			expr:   `!variables.affinityChanged || variables.affinityReachesPool`,
			message: "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution matches no node of the team's pool " +
				"(limit: nodes labelled " + contract.LabelPool + "=<the pool>)",
			messageCEL: lit(prefix(ReasonAffinityOutsidePool)+"spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution (") + ` + ` +
				`variables.affinityTerms.map(t, t.?matchExpressions.orValue([]).filter(r, r.key == ` + pool() + `).map(r, r.key + " " + r.operator + " [" + r.?values.orValue([]).join(",") + "]").join(", ")).join("; ") + ` +
				`") matches no node of pool " + variables.allowedPool + ", the only pool of team " + variables.team + ` +
				`" (limit: nodes of pool " + variables.allowedPool + "); remove that node affinity, gpuvc places the pod in its pool itself"`,
		},
	}
}

func pool() string { return lit(contract.LabelPool) }
