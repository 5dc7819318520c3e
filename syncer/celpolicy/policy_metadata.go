package celpolicy

import "github.com/gpuvc/gpuvc/api/contract"

// gpuvc.dev/ metadata drives the share controller: a pod labelled as a
// reservation with a GPU UUID would hand that UUID to share pods, a share-group
// and share-units claim room on a reservation. The webhook makes these keys
// exactly gpuvc's; the fence cannot strip keys, but it can tell the webhook's
// from forged ones: on CREATE the webhook writes only the team label, the role,
// its decisions and the share keys derived from the pod's own gpu-fraction /
// gpu-memory — values the fence derives too — and after CREATE only gpuvc's own
// components (Options.TrustedUsers) change any gpuvc.dev/ key or lift the share
// gate, except gpuvc reserve recording, once, the GPU of its own reservation pod.
// Kueue's admission gate holds a queueing team's pods to its ceiling (the
// ResourceQuota allows more, for the queue): only Kueue's users lift it. The
// webhook puts it back when the team's vCluster syncer drops it with an update,
// so such an update reaches the fence with the gate in place.

func metadataVariables(trusted, kueue []string) []variable {
	p := lit(contract.ReservedPrefix)
	l, a := "variables.labels", "variables.annotations"
	ol, oa := "variables.oldLabels", "variables.oldAnnotations"
	describe := func(kind, m string) string {
		return `.map(k, "metadata.` + kind + `[" + k + "]=" + ` + quoted(m+`[k]`) + `)`
	}
	removed := func(kind, oldMap, newMap string) string {
		return oldMap + `.filter(k, k.startsWith(` + p + `) && !(k in ` + newMap + `)).map(k, "metadata.` + kind + `[" + k + "] (removed)")`
	}
	changed := func(newMap, oldMap string) string {
		return `k.startsWith(` + p + `) && (!(k in ` + oldMap + `) || ` + oldMap + `[k] != ` + newMap + `[k])`
	}
	fraction, memory := a+`[`+annoFraction+`]`, a+`[`+annoMemory+`]`
	return []variable{
		{"trusted", `request.userInfo.username in ` + litList(trusted)},
		{"labels", `object.metadata.?labels.orValue({})`},
		{"oldLabels", `variables.create ? {} : oldObject.metadata.?labels.orValue({})`},
		{"oldAnnotations", `variables.create ? {} : oldObject.metadata.?annotations.orValue({})`},
		// gpuvc reserve, as its namespace's reservation account, recording the
		// UUID of its GPU on a reservation pod that has none yet.
		{"recordingUUID", `request.userInfo.username == "system:serviceaccount:" + request.namespace + ":` + contract.ReserveServiceAccount + `" && ` +
			`!(` + lit(contract.AnnotationGPUUUID) + ` in ` + oa + `) && ` + ol + `[?` + lit(contract.LabelRole) + `].orValue("") == ` + lit(contract.RoleReservation)},
		// CREATE: keys the webhook would not have written with these values.
		{"createdForged", l + `.filter(k, k.startsWith(` + p + `) && !(` +
			`(k == ` + lit(contract.LabelTeam) + ` && ` + l + `[k] == variables.team) || ` +
			`(k == ` + lit(contract.LabelGPUShare) + ` && ` + l + `[k] == "true" && variables.share)))` + describe("labels", l) + ` + ` +
			a + `.filter(k, k.startsWith(` + p + `) && !(` +
			`k == ` + lit(contract.AnnotationDecisions) + ` || ` +
			`(k == ` + lit(contract.AnnotationRole) + ` && ` + a + `[k] in ` + litList([]string{contract.RoleWorkload, contract.RoleControlPlane}) + `) || ` +
			`(k == ` + lit(contract.AnnotationGPUFraction) + ` && ` + annoFraction + ` in ` + a + ` && variables.fractionOK && ` +
			a + `[k].matches("^[0-9]*[.]?[0-9]+$") && double(` + a + `[k]) == double(` + fraction + `)) || ` +
			`(k == ` + lit(contract.AnnotationGPUMemory) + ` && ` + annoMemory + ` in ` + a + ` && variables.memoryOK && ` +
			a + `[k].matches("^[0-9]{1,9}$") && int(` + a + `[k]) == int(` + memory + `)) || ` +
			`(k == ` + lit(contract.AnnotationShareConfigMap) + ` && variables.share && ` + a + `[k] == variables.ownShareConfigMap)))` + describe("annotations", a)},
		// UPDATE: every gpuvc.dev/ key added, changed or removed.
		{"changedReserved", l + `.filter(k, ` + changed(l, ol) + `)` + describe("labels", l) + ` + ` + removed("labels", ol, l) + ` + ` +
			a + `.filter(k, ` + changed(a, oa) + ` && !(k == ` + lit(contract.AnnotationGPUUUID) + ` && variables.recordingUUID))` + describe("annotations", a) + ` + ` +
			removed("annotations", oa, a)},
		{"forgedKeys", `variables.create ? variables.createdForged : variables.changedReserved`},
		{"oldGated", `!variables.create && oldObject.spec.?schedulingGates.orValue([]).exists(g, g.name == ` + lit(contract.GateGPUShare) + `)`},
		{"kueue", `request.userInfo.username in ` + litList(kueue)},
		// A pod sent to Kueue (it names a queue) and still waiting for it.
		{"oldKueueGated", `!variables.create && ` + lit(contract.LabelKueueQueueName) + ` in variables.oldLabels && ` +
			`oldObject.spec.?schedulingGates.orValue([]).exists(g, g.name == ` + lit(contract.KueueAdmissionGate) + `)`},
	}
}

func metadataChecks() []check {
	return []check{
		{
			reason:  ReasonForgedMetadata,
			expr:    `variables.trusted || size(variables.forgedKeys) == 0`,
			message: "keys under " + contract.ReservedPrefix + " are written by gpuvc only (limit: the webhook's own keys)",
			messageCEL: lit(prefix(ReasonForgedMetadata)) + ` + variables.forgedKeys.join(", ") + (variables.create ? ` +
				`" on a pod gpuvc did not create (limit: ` + contract.ReservedPrefix + ` keys are written by gpuvc only: a tenant's pod may carry only ` +
				`its team label, its role and the share keys of its own gpu-fraction / gpu-memory); remove them" : ` +
				`" changed by " + request.userInfo.username + " (limit: ` + contract.ReservedPrefix + ` keys are written by gpuvc only and do not change after creation)")`,
		},
		{
			reason:  ReasonShareGateRemoved,
			expr:    `variables.trusted || !variables.oldGated || object.spec.?schedulingGates.orValue([]).exists(g, g.name == ` + lit(contract.GateGPUShare) + `)`,
			message: "the scheduling gate " + contract.GateGPUShare + " is removed by gpuvc only (limit: kept until the GPU share is assigned)",
			messageCEL: lit(prefix(ReasonShareGateRemoved)+"spec.schedulingGates: the gate "+contract.GateGPUShare+" was removed by ") + ` + request.userInfo.username + ` +
				`" (limit: only gpuvc removes it, once the pod's GPU share is assigned); keep the gate"`,
		},
		{
			reason:  ReasonKueueGateRemoved,
			expr:    `variables.kueue || !variables.oldKueueGated || object.spec.?schedulingGates.orValue([]).exists(g, g.name == ` + lit(contract.KueueAdmissionGate) + `)`,
			message: "the scheduling gate " + contract.KueueAdmissionGate + " is removed by Kueue only (limit: kept until Kueue admits the pod within the team's quota)",
			messageCEL: lit(prefix(ReasonKueueGateRemoved)+"spec.schedulingGates: the gate "+contract.KueueAdmissionGate+" was removed by ") + ` + request.userInfo.username + ` +
				`" (limit: only Kueue lifts it, when it admits the pod within the team's guarantee plus borrowing limit); keep the gate"`,
		},
	}
}
