package celpolicy

import (
	"slices"
	"strconv"
	"strings"

	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"

	"github.com/gpuvc/gpuvc/api/contract"
	"github.com/gpuvc/gpuvc/syncer"
)

// PolicyParams returns the data of a team's parameter ConfigMap from the team
// policy the webhook judges by, so both fences read one source: every key
// below. Build p as the webhook's PolicySource does (the manager's
// teampolicy.Source); PoolGPUProduct is not used.
func PolicyParams(p *syncer.TeamPolicy) map[string]string {
	systemPool := p.SystemPool
	if systemPool == "" {
		systemPool = contract.DefaultSystemPool
	}
	scheduler := p.SchedulerName
	if scheduler == "" {
		scheduler = contract.DefaultSchedulerName
	}
	mig := slices.Clone(p.AllowedMIGProfiles)
	if p.WholeGPUAs != "" {
		mig = append(mig, p.WholeGPUAs)
	}
	data := Params(p.Pool, int(p.MaxGPUsPerPod), systemPool, p.VClusterName)
	data[KeyMIGProfiles] = joinSet(mig)
	data[KeyFractions] = strconv.FormatBool(p.FractionsEnabled)
	data[KeyGPUMemoryMiB] = strconv.FormatInt(max(p.PoolGPUMemoryMiB, 0), 10)
	data[KeySchedulerName] = scheduler
	data[KeyPriorityClasses] = joinSet(p.AllowedPriorityClasses)
	data[KeyRuntimeClasses] = joinSet(p.AllowedRuntimeClasses)
	data[KeyQueue] = p.Queue
	tolerations := make([]string, len(p.AllowedTolerations))
	for i, t := range p.AllowedTolerations {
		tolerations[i] = syncer.ToleratedKey(t)
	}
	data[KeyTolerations] = joinSet(tolerations)
	data[KeyKueueQueue] = p.KueueQueue
	data[KeyKueuePriorityClasses] = joinSet(p.AllowedKueuePriorityClasses)
	data[KeyDRA] = strconv.FormatBool(p.DRA)
	data[KeyDeviceClasses] = joinSet(p.AllowedDeviceClasses)
	return data
}

// Params returns the first four keys only: the team's node pool, the GPU
// devices one pod may hold ("0": none), the pool of the team's vCluster control
// plane, and the name of the control plane's StatefulSet ("" exempts no pod as
// the control plane). The fence does not apply the rules of keys a parameter
// ConfigMap lacks (MIG allow-list, fractions, scheduling settings): use
// PolicyParams.
func Params(pool string, maxGPUsPerPod int, systemPool, controlPlane string) map[string]string {
	return map[string]string{
		KeyPool:          pool,
		KeyMaxGPUsPerPod: strconv.Itoa(maxGPUsPerPod),
		KeySystemPool:    systemPool,
		KeyControlPlane:  controlPlane,
	}
}

// TeamParams returns the parameter ConfigMap of a team namespace with the data
// PolicyParams (or Params) built.
func TeamParams(namespace string, params map[string]string) *corev1ac.ConfigMapApplyConfiguration {
	return corev1ac.ConfigMap(ParamsName, namespace).WithLabels(labels()).WithData(params)
}

// joinSet writes a list parameter: sorted, without duplicates or empty names,
// comma-separated (no name of a MIG profile, PriorityClass or RuntimeClass
// contains a comma).
func joinSet(names []string) string {
	s := slices.DeleteFunc(slices.Clone(names), func(n string) bool { return n == "" })
	slices.Sort(s)
	return strings.Join(slices.Compact(s), ",")
}

// webhookOnlyFields are the syncer.TeamPolicy fields PolicyParams does not
// pass to the CEL fence, each with the reason the fence needs no parameter for
// it. Every other field must change the parameters (TestEveryTeamPolicyField
// ReachesTheFence): a new field reaches the webhook and the CEL layer both, or
// is listed here on purpose.
var webhookOnlyFields = map[string]string{
	"Team":           "names objects and messages only; the fence is bound per namespace",
	"Namespace":      "where the parameter ConfigMap itself lives: the binding finds it by namespace",
	"PoolGPUProduct": "maps a MIG request for another GPU model onto the pool's profiles, a mutation that needs gpu/mig's catalog; the fence checks the mapped profile against the MIG allow-list",
	"KueueCeiling":   "the namespace's ResourceQuota enforces ceiling plus queue at admission in both layers' stead; the webhook uses it only to explain a refused pod",
	"KueueMaxQueued": "as KueueCeiling: enforced by the namespace's ResourceQuota; the webhook uses it only to explain a refused pod",
	"GPUCeiling":     "whole GPUs and DRA devices together need the namespace's quota usage, which CEL cannot read; the ResourceQuota holds each resource alone in both layers' stead (docs/dra.md)",
}
