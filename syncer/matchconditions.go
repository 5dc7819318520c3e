package syncer

import (
	"fmt"
	"regexp"
	"strconv"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"

	"github.com/gpuvc/gpuvc/api/contract"
)

// RoutinePodConditionName names the validating webhook's match condition that
// lets the API server skip the call for a routine pod (ConfigOptions.FencedByCEL).
const RoutinePodConditionName = "not-a-routine-pod-create"

// routinePodCondition is true — call the validating webhook — unless the
// request is the CREATE of a routine workload pod: one whose every check the
// validating webhook makes is repeated by the CEL fence (syncer/celpolicy) on
// the pod as it will be stored, or cannot apply to it, and which needs no
// event. The API server evaluates it on the pod after every mutating webhook,
// so a later webhook that changes the pod either leaves it routine (and the
// fence judges it) or makes it not routine (and the webhook is called).
//
// What the validating webhook adds over the fence, and why a routine pod
// needs none of it (docs/syncer.md, "Which pods the validating webhook sees"):
//   - checks that read objects: envFrom ConfigMaps and Secrets (GPUDeviceEnvFrom),
//     nodes named by spec.nodeName or matchFields (NodeNameOutsidePool,
//     NodeAffinityOutsidePool), ResourceClaims and the GPU ceiling
//     (ResourceClaim*, GPUCeilingExceeded), the queue depth (QueueFull): a
//     routine pod has no envFrom, nodeName, matchFields, claims nor GPUs;
//   - MIG mapping and share gating: no GPU, no share annotation;
//   - NotAsAdmitted, the fixed point of the mutations: the fence refuses a
//     wrong pool selector, foreign tolerations, scheduler, priority and runtime
//     classes, KAI queue, Kueue labels, gates and gpuvc.dev/ values; what it
//     cannot refuse (the team label, the role annotation and the pool
//     toleration missing) makes the pod not routine here;
//   - the decisions turned into events: a routine pod's decisions annotation
//     holds the pool pinning alone, which is not sent as an event (routineReasons).
func routinePodCondition() admissionregistrationv1.MatchCondition {
	q := strconv.Quote
	ann := `object.metadata.?annotations.orValue({})`
	// What the mutating webhook writes for a pod whose only decision is the
	// pool pinning: one Normal PoolPinned note. Anything else (a quote or a
	// backslash in the message included) does not match: the webhook is called.
	routineDecisions := `^\[\{"type":"` + Normal + `","reason":"` + ReasonPoolPinned + `","message":"[^"\\]*"\}\]$`
	regexp.MustCompile(routineDecisions) // RE2, as CEL's matches()
	noGPU := func(c, field string) string {
		return fmt.Sprintf(`%s.?resources.?%s.orValue({}).all(k, !k.startsWith(%s) || %s.resources.%s[k] == "0")`,
			c, field, q(contract.NVIDIAPrefix), c, field)
	}
	routine := `request.operation == "CREATE" && request.?subResource.orValue("") == "" && ` +
		// Marks of gpuvc's mutating webhook that the fence does not require.
		`object.metadata.?annotations[?` + q(contract.AnnotationRole) + `].orValue("") == ` + q(contract.RoleWorkload) + ` && ` +
		`object.metadata.?labels[?` + q(contract.LabelTeam) + `].orValue("") != "" && ` +
		`object.spec.?tolerations.orValue([]).exists(t, t.?key.orValue("") == ` + q(contract.LabelPool) + ` && ` +
		`t.?operator.orValue("Equal") == "Equal" && t.?effect.orValue("NoSchedule") == "NoSchedule" && ` +
		`t.?value.orValue("") == object.spec.?nodeSelector[?` + q(contract.LabelPool) + `].orValue("")) && ` +
		// Nothing the webhook must read objects for.
		`object.spec.?nodeName.orValue("") == "" && ` +
		`size(object.spec.?resourceClaims.orValue([])) == 0 && ` +
		`object.spec.?affinity.?nodeAffinity.?requiredDuringSchedulingIgnoredDuringExecution.?nodeSelectorTerms.orValue([]).all(t, size(t.?matchFields.orValue([])) == 0) && ` +
		// No GPU: no nvidia.com/ resource above 0 (the team's LimitRange writes
		// nvidia.com/gpu: 0 into every container), no share annotation.
		`(object.spec.containers + object.spec.?initContainers.orValue([])).all(c, size(c.?envFrom.orValue([])) == 0 && ` +
		noGPU("c", "limits") + ` && ` + noGPU("c", "requests") + `) && ` +
		`![` + q(contract.AnnotationKAIFraction) + `, ` + q(contract.AnnotationKAIMemory) + `, ` + q(contract.AnnotationKAIFractionDevices) + `].exists(k, k in ` + ann + `) && ` +
		// No decision worth an event.
		`(!(` + q(contract.AnnotationDecisions) + ` in ` + ann + `) || ` + ann + `[` + q(contract.AnnotationDecisions) + `].matches(` + q(routineDecisions) + `))`
	return admissionregistrationv1.MatchCondition{Name: RoutinePodConditionName, Expression: "!(" + routine + ")"}
}
