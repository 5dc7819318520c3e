package celpolicy

import (
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	admissionv1ac "k8s.io/client-go/applyconfigurations/admissionregistration/v1"

	"github.com/gpuvc/gpuvc/api/contract"
)

// variable is a named CEL expression of the policy; later ones may use earlier
// ones as variables.<name>. They are evaluated lazily, only when used.
type variable struct{ name, expr string }

// podVariables reads the request, the parameters and the pod once.
func podVariables(controlPlaneCreators []string) []variable {
	initList := "object.spec.?initContainers.orValue([])"
	peak := "([" + initList + ".filter(c, " + sidecar("c") + ").map(c, " + gpuDevices("c", "n") + ").sum() + " +
		"object.spec.containers.map(c, " + gpuDevices("c", "n") + ").sum()] + " +
		initList + ".transformList(i, c, !(" + sidecar("c") + "), " +
		initList + ".slice(0, i).filter(s, " + sidecar("s") + ").map(s, " + gpuDevices("s", "n") + ").sum() + " + gpuDevices("c", "n") + ")).max()"
	return []variable{
		{"create", `request.operation == "CREATE"`},
		{"team", `namespaceObject.metadata.?labels[?` + lit(contract.LabelTeam) + `].orValue(namespaceObject.metadata.name)`},

		// Parameters; a missing or malformed key yields "" or -1, which
		// InvalidAdmissionParams refuses.
		{"pool", `params.?data[?` + lit(KeyPool) + `].orValue("")`},
		{"systemPool", `params.?data[?` + lit(KeySystemPool) + `].orValue("")`},
		{"maxGPUsRaw", `params.?data[?` + lit(KeyMaxGPUsPerPod) + `].orValue("")`},
		{"maxGPUs", `variables.maxGPUsRaw.matches("^[0-9]{1,9}$") ? int(variables.maxGPUsRaw) : -1`},
		{"controlPlaneName", `params.?data[?` + lit(KeyControlPlane) + `].orValue("")`},

		// The team's vCluster control plane, as the webhook decides it: created
		// by the StatefulSet controller (the request's user, which no tenant can
		// forge), controlled by the team's vCluster StatefulSet, not a pod
		// vCluster synced. Only on CREATE: an UPDATE judges what changed.
		{"controlPlane", `variables.create && variables.controlPlaneName != "" && ` +
			`request.userInfo.username in ` + litList(controlPlaneCreators) + ` && ` +
			`!(` + lit(contract.LabelVClusterManagedBy) + ` in object.metadata.?labels.orValue({})) && ` +
			`object.metadata.?ownerReferences.orValue([]).exists(o, o.?controller.orValue(false) && o.apiVersion.startsWith("apps/") && ` +
			// A StatefulSet, or the ReplicaSet <name>-<hash> of the Deployment vCluster
			// uses when its datastore is ephemeral (as the webhook decides).
			`((o.kind == "StatefulSet" && o.name == variables.controlPlaneName) || ` +
			`(o.kind == "ReplicaSet" && o.name.startsWith(variables.controlPlaneName + "-"))))`},

		// Pool fence.
		{"selectedPool", `object.spec.?nodeSelector[?` + labelPool + `].orValue("")`},
		{"oldSelectedPool", `variables.create ? "" : oldObject.spec.?nodeSelector[?` + labelPool + `].orValue("")`},
		{"allowedPool", `variables.create ? (variables.controlPlane ? variables.systemPool : variables.pool) : ` +
			`(variables.oldSelectedPool != "" && variables.oldSelectedPool == variables.systemPool ? variables.systemPool : variables.pool)`},
		{"newTolerations", `variables.create ? object.spec.?tolerations.orValue([]) : ` +
			`object.spec.?tolerations.orValue([]).filter(t, !(t in oldObject.spec.?tolerations.orValue([])))`},
		{"foreignTolerations", `variables.newTolerations.filter(t, ` +
			`(t.?key.orValue("") == "" && t.?operator.orValue("") == "Exists") || ` +
			`(t.?key.orValue("") == ` + labelPool + ` && (t.?operator.orValue("") == "Exists" || t.?value.orValue("") != variables.allowedPool)))`},

		// Containers an UPDATE adds (kubectl debug).
		{"oldEphemeralNames", `variables.create ? [] : oldObject.spec.?ephemeralContainers.orValue([]).map(c, c.name)`},

		// Share annotations.
		{"annotations", `object.metadata.?annotations.orValue({})`},
		{"share", annoFraction + ` in variables.annotations || ` + annoMemory + ` in variables.annotations`},
		{"ownShareConfigMap", `variables.share && object.metadata.?name.orValue("") != "" ? ` + shareCMPrefix + ` + object.metadata.name : ""`},
		{"fractionOK", `!(` + annoFraction + ` in variables.annotations) || ` +
			`(variables.annotations[` + annoFraction + `].matches("^[0-9]*[.]?[0-9]+$") && ` +
			`double(variables.annotations[` + annoFraction + `]) > 0.0 && double(variables.annotations[` + annoFraction + `]) < 1.0)`},
		{"memoryOK", `!(` + annoMemory + ` in variables.annotations) || ` +
			`(variables.annotations[` + annoMemory + `].matches("^[0-9]{1,9}$") && int(variables.annotations[` + annoMemory + `]) > 0)`},

		// GPU devices (CREATE only: resources cannot change afterwards, and
		// in-place resize covers cpu and memory only).
		{"nvidiaNames", `variables.create ? (object.spec.containers + ` + initList + `).map(c, ` +
			// Zero counts as not asking: a team's LimitRange gives every container
			// without a GPU limit nvidia.com/gpu: 0 before admission policies run.
			`c.?resources.?limits.orValue({}).filter(k, k.startsWith(` + resourceNVIDIA + `) && quantity(c.resources.limits[k]).isGreaterThan(quantity("0"))) + ` +
			`c.?resources.?requests.orValue({}).filter(k, k.startsWith(` + resourceNVIDIA + `) && quantity(c.resources.requests[k]).isGreaterThan(quantity("0")))).flatten().distinct() : []`},
		{"gpuNames", `variables.nvidiaNames.filter(n, n == ` + resourceGPU + ` || n.startsWith(` + resourceMIG + `))`},
		{"unsupportedNames", `variables.nvidiaNames.filter(n, !(n in variables.gpuNames))`},
		// Devices of each GPU resource at the pod's peak, as the scheduler
		// counts them and the webhook does: the regular containers run together
		// with the sidecars (restartable init containers); every other init
		// container runs alone with the sidecars started before it.
		{"gpuPeaks", `variables.gpuNames.map(n, ` + peak + `)`},
		{"gpuDevices", `variables.gpuPeaks.sum()`},
	}
}

// check is one validation: the expression must hold, else the pod is refused
// with the message.
type check struct {
	reason     string
	expr       string
	message    string // static fallback
	messageCEL string // names the field, the value and the limit
}

func prefix(reason string) string { return "gpuvc: " + reason + ": " }

func podChecks() []check {
	privileged := `c.?securityContext.?privileged.orValue(false)`
	escalation := `c.?securityContext.?allowPrivilegeEscalation.orValue(false)`
	gpuEnv := `c.?env.orValue([]).exists(e, e.name in ` + gpuEnvNames + `)`
	reservedEnv := `c.?env.orValue([]).exists(e, e.?valueFrom.?configMapKeyRef.?name.orValue("").startsWith(` + shareCMPrefix + `)) || ` +
		`c.?envFrom.orValue([]).exists(e, e.?configMapRef.?name.orValue("").startsWith(` + shareCMPrefix + `) && e.configMapRef.name != variables.ownShareConfigMap)`
	reservedEnvNames := `c.?env.orValue([]).filter(e, e.?valueFrom.?configMapKeyRef.?name.orValue("").startsWith(` + shareCMPrefix + `)).map(e, e.valueFrom.configMapKeyRef.name) + ` +
		`c.?envFrom.orValue([]).filter(e, e.?configMapRef.?name.orValue("").startsWith(` + shareCMPrefix + `) && e.configMapRef.name != variables.ownShareConfigMap).map(e, e.configMapRef.name)`
	reservedVolumes := `object.spec.?volumes.orValue([]).transformList(i, v, ` +
		`v.?configMap.?name.orValue("").startsWith(` + shareCMPrefix + `) || ` +
		`v.?projected.?sources.orValue([]).exists(s, s.?configMap.?name.orValue("").startsWith(` + shareCMPrefix + `)), ` +
		`"spec.volumes[" + string(i) + "] (" + v.name + ")")`
	hostNamespaces := `(object.spec.?hostNetwork.orValue(false) ? ["spec.hostNetwork=true"] : []) + ` +
		`(object.spec.?hostPID.orValue(false) ? ["spec.hostPID=true"] : []) + ` +
		`(object.spec.?hostIPC.orValue(false) ? ["spec.hostIPC=true"] : [])`

	// The baseline rules follow privilege escalation and come before host
	// namespaces: a pod that must break both (hostProcess needs hostNetwork) is
	// refused for its own rule (the API server reports the first only).
	return append(append([]check{
		{
			reason: ReasonInvalidParams,
			expr: `variables.pool != "" && variables.systemPool != "" && variables.maxGPUs >= 0 && variables.gpuMemory >= 0 && ` +
				`(!variables.fractionsJudged || variables.fractionsRaw in ["true", "false"])`,
			message: "the namespace's ConfigMap " + ParamsName + " lacks pool, systemPool or a whole-number maxGPUsPerPod; " +
				"every pod is refused until gpuvc rewrites it",
			messageCEL: lit(prefix(ReasonInvalidParams)+"ConfigMap ") + ` + namespaceObject.metadata.name + "/` + ParamsName + ` has ` +
				KeyPool + `=\"" + variables.pool + "\", ` + KeySystemPool + `=\"" + variables.systemPool + "\", ` +
				KeyMaxGPUsPerPod + `=\"" + variables.maxGPUsRaw + "\", ` + KeyGPUMemoryMiB + `=\"" + variables.gpuMemoryRaw + "\", ` +
				KeyFractions + `=\"" + variables.fractionsRaw + "\" (limit: pool and systemPool set, maxGPUsPerPod a whole number, ` +
				`gpuMemoryMiB a whole number or unset, fractions true, false or unset); ` +
				`every pod of the namespace is refused until gpuvc rewrites it"`,
		},
		{
			reason: ReasonPoolNotSelected,
			expr: `variables.create ? variables.selectedPool == variables.allowedPool : ` +
				`(variables.selectedPool == variables.oldSelectedPool || (variables.oldSelectedPool == "" && variables.selectedPool == variables.allowedPool))`,
			message: "spec.nodeSelector[" + contract.LabelPool + "] must name the team's pool (limit: the pool in " + ParamsName + ")",
			messageCEL: lit(prefix(ReasonPoolNotSelected)+"spec.nodeSelector["+contract.LabelPool+"]=") +
				` + (variables.selectedPool == "" ? "(unset)" : variables.selectedPool) + " but pods of team " + variables.team + " must select pool " + variables.allowedPool + ` +
				`" (limit: nodeSelector ` + contract.LabelPool + `=" + variables.allowedPool + (variables.create ? "" : ", unchanged after creation") + ` +
				`"); gpuvc's webhook sets it on every pod, so it is not running for this namespace: retry later or tell the platform team"`,
		},
		{
			reason:  ReasonNodeNameSet,
			expr:    `!variables.create || object.spec.?nodeName.orValue("") == ""`,
			message: "spec.nodeName skips the scheduler and the pool's taints (limit: no spec.nodeName at creation)",
			messageCEL: lit(prefix(ReasonNodeNameSet)+"spec.nodeName=") + ` + object.spec.nodeName + " skips the scheduler and the node pools' taints ` +
				`(limit: no spec.nodeName at creation; pods of team " + variables.team + " reach pool " + variables.allowedPool + " through the scheduler); ` +
				`remove spec.nodeName, or pick a node of the pool with nodeSelector kubernetes.io/hostname"`,
		},
		{
			reason: ReasonForgedRole,
			expr: `!variables.create || variables.controlPlane || ` +
				`variables.annotations[?` + lit(contract.AnnotationRole) + `].orValue("") != ` + lit(contract.RoleControlPlane),
			message: contract.AnnotationRole + "=" + contract.RoleControlPlane + " on a pod that is not the team's vCluster control plane " +
				"(limit: " + contract.ReservedPrefix + " keys are written by gpuvc only)",
			messageCEL: lit(prefix(ReasonForgedRole)+"metadata.annotations["+contract.AnnotationRole+"]=\""+contract.RoleControlPlane+"\" ") +
				` + "on a pod that is not the vCluster control plane of team " + variables.team + ` +
				lit(" (limit: "+contract.ReservedPrefix+" keys are written by gpuvc only; the control plane is the StatefulSet controller's pod of StatefulSet ") +
				` + (variables.controlPlaneName == "" ? "(none)" : variables.controlPlaneName) + "); remove the annotation"`,
		},
		{
			reason:  ReasonPrivileged,
			expr:    `!` + anyContainer(privileged),
			message: "a privileged container is not allowed in team namespaces (limit: unprivileged containers only)",
			messageCEL: lit(prefix(ReasonPrivileged)) + ` + ` + containerFindings(privileged, `PATH + ".securityContext.privileged=true"`) + `.join(", ") + ` +
				`" is not allowed in team namespaces (limit: unprivileged containers only): a privileged container sees every GPU of the node"`,
		},
		{
			reason:  ReasonPrivilegeEscalation,
			expr:    `!` + anyContainer(escalation),
			message: "allowPrivilegeEscalation=true is not allowed in team namespaces (limit: false or unset)",
			messageCEL: lit(prefix(ReasonPrivilegeEscalation)) + ` + ` + containerFindings(escalation, `PATH + ".securityContext.allowPrivilegeEscalation=true"`) + `.join(", ") + ` +
				`" is not allowed in team namespaces (limit: allowPrivilegeEscalation false or unset); remove it"`,
		},
	}, baselineChecks()...), []check{
		{
			reason:  ReasonHostPath,
			expr:    `!variables.create || !object.spec.?volumes.orValue([]).exists(v, has(v.hostPath))`,
			message: "hostPath volumes are not allowed in team namespaces (limit: no hostPath volumes)",
			messageCEL: lit(prefix(ReasonHostPath)) + ` + object.spec.volumes.transformList(i, v, has(v.hostPath), ` +
				`"spec.volumes[" + string(i) + "] (" + v.name + ") mounts hostPath \"" + v.hostPath.path + "\"").join(", ") + ` +
				`", which is not allowed in team namespaces (limit: no hostPath volumes); use an emptyDir, a ConfigMap or a PersistentVolumeClaim"`,
		},
		{
			reason:  ReasonHostNamespace,
			expr:    `!variables.create || size(` + hostNamespaces + `) == 0`,
			message: "hostNetwork, hostPID and hostIPC are not allowed in team namespaces",
			messageCEL: lit(prefix(ReasonHostNamespace)) + ` + (` + hostNamespaces + `).join(", ") + ` +
				`" is not allowed in team namespaces (limit: pods use their own network, PID and IPC namespaces); remove it"`,
		},
		{
			reason:  ReasonGPUEnv,
			expr:    `!` + anyContainer(gpuEnv),
			message: "NVIDIA device variables are not allowed in container env (limit: GPUs come only from requests)",
			messageCEL: lit(prefix(ReasonGPUEnv)) + ` + ` + containerFindings(gpuEnv,
				`PATH + ".env[" + c.env.filter(e, e.name in `+gpuEnvNames+`).map(e, e.name + "=\"" + e.?value.orValue("") + "\"").join(", ") + "]"`) + `.join(", ") + ` +
				`" is not allowed (limit: GPUs come only from requests): the NVIDIA runtime would expose GPUs the pod was not given"`,
		},
		{
			reason: ReasonReservedConfigMap,
			expr:   `!` + anyContainer(reservedEnv) + ` && (!variables.create || size(` + reservedVolumes + `) == 0)`,
			message: "references to ConfigMaps named " + contract.ShareConfigMapPrefix + "* are reserved for gpuvc's GPU share assignments " +
				"(limit: a pod reads only its own share)",
			messageCEL: lit(prefix(ReasonReservedConfigMap)) + ` + (` +
				containerFindings(reservedEnv, `PATH + " refers to ConfigMap " + (`+reservedEnvNames+`).join(", ")`) +
				` + (variables.create ? ` + reservedVolumes + ` : [])).join(", ") + ` +
				`": the prefix ` + contract.ShareConfigMapPrefix + ` is reserved for gpuvc's GPU share assignments (limit: a pod reads only its own share); rename your ConfigMap"`,
		},
		{
			reason: ReasonUnsupportedGPUResource,
			expr:   `size(variables.unsupportedNames) == 0`,
			message: "only nvidia.com/gpu and nvidia.com/mig-<profile> are GPU resources gpuvc hands out " +
				"(limit: those, or the gpu-fraction/gpu-memory annotations)",
			messageCEL: lit(prefix(ReasonUnsupportedGPUResource)+"resources.limits[") + ` + variables.unsupportedNames.join(", ") + ` +
				`"] in spec.containers[*] or spec.initContainers[*] is not a GPU resource gpuvc hands out ` +
				`(limit: ` + contract.ResourceGPU + `, ` + contract.ResourceMIGPrefix + `<profile>, or the gpu-fraction / gpu-memory annotations)"`,
		},
		{
			reason:  ReasonControlPlaneGPU,
			expr:    `!variables.controlPlane || (size(variables.nvidiaNames) == 0 && !variables.share)`,
			message: "pods of the vCluster control plane may not use GPUs (limit: none)",
			messageCEL: lit(prefix(ReasonControlPlaneGPU)+"the vCluster control plane (StatefulSet ") + ` + variables.controlPlaneName + ") asks for " + ` +
				`(variables.nvidiaNames + (variables.share ? ["a gpu-fraction/gpu-memory share"] : [])).join(", ") + ` +
				`" (limit: no GPUs for control-plane pods); remove them from the control plane's values"`,
		},
		{
			reason:  ReasonGPUCountAboveLimit,
			expr:    `variables.gpuDevices <= variables.maxGPUs`,
			message: "the pod requests more GPU devices than the team allows per pod (limit: maxGPUsPerPod in " + ParamsName + ")",
			messageCEL: lit(prefix(ReasonGPUCountAboveLimit)+"the pod requests ") + ` + string(variables.gpuDevices) + " GPU device(s) (" + ` +
				`variables.gpuNames.transformList(i, n, n + ": " + string(variables.gpuPeaks[i])).join(", ") + ` +
				`" at its peak, in spec.containers[*]/spec.initContainers[*].resources.limits) but team " + variables.team + " allows at most " + ` +
				`string(variables.maxGPUs) + " per pod (limit: ` + KeyMaxGPUsPerPod + `=" + string(variables.maxGPUs) + "); request fewer or split the work across pods"`,
		},
		{
			reason:  ReasonInvalidGPUShare,
			expr:    `!variables.create || (variables.fractionOK && variables.memoryOK)`,
			message: "gpu-fraction must be a decimal number greater than 0 and less than 1, gpu-memory a whole number of MiB greater than 0",
			messageCEL: lit(prefix(ReasonInvalidGPUShare)) + ` + (!variables.fractionOK ? ` +
				`"metadata.annotations[gpu-fraction]=\"" + variables.annotations[` + annoFraction + `] + "\" is not a fraction of a GPU ` +
				`(limit: a decimal number greater than 0 and less than 1, e.g. \"0.5\"); fix the value, or request ` + contract.ResourceGPU + `: 1 for a whole GPU" : ` +
				`"metadata.annotations[gpu-memory]=\"" + variables.annotations[` + annoMemory + `] + "\" is not a memory size ` +
				`(limit: a whole number of MiB greater than 0, e.g. \"20000\"); fix the value")`,
		},
	}...)
}

// podFence is the ValidatingAdmissionPolicy on pods.
func podFence(opts Options) *admissionv1ac.ValidatingAdmissionPolicyApplyConfiguration {
	spec := admissionv1ac.ValidatingAdmissionPolicySpec().
		WithFailurePolicy(admissionregistrationv1.Fail).
		WithParamKind(admissionv1ac.ParamKind().WithAPIVersion("v1").WithKind("ConfigMap")).
		WithMatchConstraints(admissionv1ac.MatchResources().WithResourceRules(
			admissionv1ac.NamedRuleWithOperations().
				WithOperations(admissionregistrationv1.Create, admissionregistrationv1.Update).
				WithAPIGroups("").WithAPIVersions("v1").
				// pods/ephemeralcontainers carries the whole Pod: kubectl debug
				// containers are judged like the others.
				WithResources("pods", "pods/ephemeralcontainers")))
	vars := append(podVariables(opts.controlPlaneCreators()), teamVariables()...)
	vars = append(vars, metadataVariables(opts.trustedUsers(), opts.kueueUsers())...)
	for _, v := range append(vars, escapeVariables()...) {
		spec.WithVariables(admissionv1ac.Variable().WithName(v.name).WithExpression(v.expr))
	}
	for _, c := range append(append(append(podChecks(), teamChecks()...), metadataChecks()...), escapeChecks()...) {
		spec.WithValidations(admissionv1ac.Validation().
			WithExpression(c.expr).
			WithMessage(prefix(c.reason) + c.message).
			WithMessageExpression(c.messageCEL).
			WithReason(metav1.StatusReasonForbidden))
	}
	return admissionv1ac.ValidatingAdmissionPolicy(PolicyName).WithLabels(labels()).WithSpec(spec)
}

// podFenceBinding applies the pod fence to every team namespace with the
// namespace's own parameter ConfigMap; without it, pods are refused.
func podFenceBinding() *admissionv1ac.ValidatingAdmissionPolicyBindingApplyConfiguration {
	return admissionv1ac.ValidatingAdmissionPolicyBinding(BindingName).WithLabels(labels()).
		WithSpec(admissionv1ac.ValidatingAdmissionPolicyBindingSpec().
			WithPolicyName(PolicyName).
			// No namespace: the ConfigMap is looked up in the pod's namespace.
			WithParamRef(admissionv1ac.ParamRef().WithName(ParamsName).
				WithParameterNotFoundAction(admissionregistrationv1.DenyAction)).
			WithMatchResources(teamNamespaces()).
			WithValidationActions(admissionregistrationv1.Deny))
}

func labels() map[string]string { return map[string]string{labelManagedBy: managedBy} }
