package syncer

import "github.com/gpuvc/gpuvc/api/contract"

// The chains, in order. Checks come first and refuse; mutations then bring the
// pod in line. Security first (cheapest to explain), then placement, devices
// and shares.

var securityChecks = concat(concat(
	[]Check{checkPrivileged, checkHostPath, checkHostNamespaces}, baselineChecks),
	[]Check{checkGPUEnv, checkGPUEnvFrom, checkReservedConfigMaps, checkReservedServiceAccount})

// workloadCreate admits a tenant pod (everything vCluster syncs, and any pod not
// proven to be the control plane).
var workloadCreate = Chain{
	Checks: concat(securityChecks, []Check{
		checkNodeName, checkNodeAffinity,
		checkGPUResources, checkMIGProfiles, checkGPUCount, checkShare, checkGPULimitEnv, checkResourceClaims, checkPodClaims, checkPodCeiling,
	}),
	Mutations: []Mutation{
		mutateReservedMetadata, mutatePoolFence,
		mutateSchedulerName, mutatePriorityClass, mutateRuntimeClass, mutateQueue,
		mutateWholeGPUAsMIG, mutateMIGProfiles, mutateShare,
		// Last: they read the GPU resources the mutations above settled.
		mutateKueueQueue, mutateKueuePriority, mutateKueueGate, mutateForeignGates,
	},
}

// controlPlaneCreate admits the team's vCluster pod: no GPUs, system pool. Its
// scheduler and priority come from the platform's StatefulSet and are kept.
var controlPlaneCreate = Chain{
	Checks:    concat(securityChecks, []Check{checkNodeName, checkNodeAffinity, checkControlPlaneGPU, checkResourceClaims}),
	Mutations: []Mutation{mutateReservedMetadata, mutatePoolFence, mutateForeignGates},
}

// podUpdate keeps what gpuvc owns through updates.
var podUpdate = Chain{
	Checks: []Check{checkNodeAffinity, checkKueueGateKept},
	Mutations: []Mutation{
		mutateRestoreReserved, mutateRestoreGate, mutateRestoreKueueGate, mutateRestorePoolSelector,
		mutateUpdateTolerations, mutateRestoreQueue, mutateRestoreKueueQueue,
	},
}

// ephemeralUpdate judges containers added through pods/ephemeralcontainers
// (kubectl debug): they run next to the pod's GPUs. Where a rule also reads
// pod-level fields, those are what CREATE judged: an update cannot change them.
var ephemeralUpdate = Chain{Checks: concat(
	[]Check{checkPrivileged, checkGPUEnv, checkGPUEnvFrom, checkReservedConfigMaps},
	[]Check{checkCapabilities, checkSeccomp, checkAppArmor, checkProcMount, checkHostProcess, checkSELinux})}

func createChain(role string) Chain {
	if role == contract.RoleControlPlane {
		return controlPlaneCreate
	}
	return workloadCreate
}

func concat(a, b []Check) []Check {
	return append(append([]Check{}, a...), b...)
}
