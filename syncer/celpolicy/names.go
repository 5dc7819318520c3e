package celpolicy

import "github.com/gpuvc/gpuvc/syncer"

// Names of the objects this package produces.
const (
	// PolicyName is the pod fence; BindingName binds it to team namespaces.
	PolicyName  = "gpuvc-pod-fence"
	BindingName = "gpuvc-pod-fence"
	// GuardPolicyName keeps the parameter ConfigMaps gpuvc's own;
	// GuardBindingName binds it to team namespaces.
	GuardPolicyName  = "gpuvc-params-guard"
	GuardBindingName = "gpuvc-params-guard"
	// NetworkPolicyFenceName keeps a team's NetworkPolicies inside its
	// namespace; NetworkPolicyFenceBindingName binds it to team namespaces.
	NetworkPolicyFenceName        = "gpuvc-networkpolicy-fence"
	NetworkPolicyFenceBindingName = "gpuvc-networkpolicy-fence"
	// StorageFenceName keeps a team's new claims off volumes not provisioned
	// for them; StorageFenceBindingName binds it to team namespaces.
	StorageFenceName        = "gpuvc-storage-fence"
	StorageFenceBindingName = "gpuvc-storage-fence"
	// ClaimFenceName and TemplateFenceName judge a team's ResourceClaims
	// (and their status) and ResourceClaimTemplates; their bindings have
	// the same names.
	ClaimFenceName    = "gpuvc-resourceclaim-fence"
	TemplateFenceName = "gpuvc-resourceclaimtemplate-fence"
	// ParamsName is the parameter ConfigMap in every team namespace.
	ParamsName = "gpuvc-admission-params"

	// FieldManager is the server-side apply field manager Install uses (the
	// manager's own, so the manager and the CLI never fight over fields).
	FieldManager = "gpuvc-manager"
	// DefaultParamsWriter is the manager's service account: the only user
	// besides system:masters who may write parameter ConfigMaps, unless
	// Options.ParamsWriters says otherwise.
	DefaultParamsWriter = "system:serviceaccount:gpuvc-system:gpuvc-manager"

	labelManagedBy = "app.kubernetes.io/managed-by"
	managedBy      = "gpuvc"
)

// Keys of the parameter ConfigMap's data.
const (
	// KeyPool is the team's node pool (gpuvc.dev/pool).
	KeyPool = "pool"
	// KeyMaxGPUsPerPod is the number of GPU devices (whole GPUs plus MIG
	// instances) one pod may hold at its peak; "0" allows none.
	KeyMaxGPUsPerPod = "maxGPUsPerPod"
	// KeySystemPool is the pool of the team's vCluster control plane.
	KeySystemPool = "systemPool"
	// KeyControlPlane names the team's vCluster StatefulSet (the Helm release);
	// "" exempts no pod as the control plane.
	KeyControlPlane = "controlPlane"

	// Keys PolicyParams adds. A ConfigMap without one of them (written by an
	// older manager through Params) is not judged by that key's rules.

	// KeyMIGProfiles lists the MIG profiles the team may use, comma-separated
	// (the allowed profiles and WholeGPUAs); "" allows none.
	KeyMIGProfiles = "migProfiles"
	// KeyFractions is "true" when the team may use gpu-fraction / gpu-memory.
	KeyFractions = "fractions"
	// KeyGPUMemoryMiB is the memory of one GPU of the pool: gpu-memory must be
	// below it. "0": unknown, no bound.
	KeyGPUMemoryMiB = "gpuMemoryMiB"
	// KeySchedulerName is the scheduler every workload pod must name.
	KeySchedulerName = "schedulerName"
	// KeyPriorityClasses and KeyRuntimeClasses list the classes workload pods
	// may name, comma-separated; "" allows none.
	KeyPriorityClasses = "priorityClasses"
	KeyRuntimeClasses  = "runtimeClasses"
	// KeyQueue is the only KAI queue label (kai.scheduler/queue) workload pods
	// may carry; "" allows none.
	KeyQueue = "queue"
	// KeyTolerations lists the tolerations the team allows besides the pool's
	// and Kubernetes' bounded not-ready/unreachable ones, comma-separated, each
	// key|operator|value|effect (syncer.ToleratedKey); "" allows none. Without
	// the key only wildcard and foreign pool tolerations are refused.
	KeyTolerations = "tolerations"
	// KeyKueueQueue is the Kueue LocalQueue a queueing team's GPU pods name;
	// "" = the team does not queue (no pod may name one).
	KeyKueueQueue = "kueueQueue"
	// KeyKueuePriorityClasses lists the WorkloadPriorityClasses the team's
	// queued pods may name (kueue.x-k8s.io/priority-class); "" allows none.
	KeyKueuePriorityClasses = "kueuePriorityClasses"
	// KeyDRA is "true" when the team uses Dynamic Resource Allocation
	// (spec.dra): its pods may name ResourceClaims, its namespace may hold
	// claims and claim templates. Unset or anything else: none.
	KeyDRA = "dra"
	// KeyDeviceClasses lists the DeviceClasses the team's claims may name,
	// comma-separated; "" allows none.
	KeyDeviceClasses = "deviceClasses"
)

// Reasons start every refusal ("gpuvc: <Reason>: ..."). Where the webhook
// refuses the same thing, the reason is the webhook's.
const (
	ReasonInvalidParams           = "InvalidAdmissionParams"
	ReasonPoolNotSelected         = "PoolNotSelected"
	ReasonTolerationOutsidePool   = "TolerationOutsidePool"
	ReasonNodeNameSet             = "NodeNameSet"
	ReasonForgedRole              = "ForgedControlPlaneRole"
	ReasonPrivileged              = syncer.ReasonPrivileged
	ReasonPrivilegeEscalation     = "PrivilegeEscalation"
	ReasonHostPath                = syncer.ReasonHostPath
	ReasonHostNamespace           = syncer.ReasonHostNamespace
	ReasonCapabilityNotAllowed    = syncer.ReasonCapabilityNotAllowed
	ReasonSeccompUnconfined       = syncer.ReasonSeccompUnconfined
	ReasonAppArmorUnconfined      = syncer.ReasonAppArmorUnconfined
	ReasonProcMountNotAllowed     = syncer.ReasonProcMountNotAllowed
	ReasonSysctlNotAllowed        = syncer.ReasonSysctlNotAllowed
	ReasonHostPort                = syncer.ReasonHostPort
	ReasonHostProcess             = syncer.ReasonHostProcess
	ReasonSELinuxNotAllowed       = syncer.ReasonSELinuxNotAllowed
	ReasonGPUEnv                  = syncer.ReasonGPUEnv
	ReasonReservedConfigMap       = syncer.ReasonReservedConfigMap
	ReasonUnsupportedGPUResource  = syncer.ReasonUnsupportedGPUResource
	ReasonControlPlaneGPU         = syncer.ReasonControlPlaneGPU
	ReasonGPUCountAboveLimit      = syncer.ReasonGPUCountAboveLimit
	ReasonInvalidGPUShare         = syncer.ReasonInvalidGPUShare
	ReasonParamsWriter            = "AdmissionParamsProtected"
	ReasonMIGProfileNotAllowed    = syncer.ReasonMIGProfileNotAllowed
	ReasonFractionsDisabled       = syncer.ReasonFractionsDisabled
	ReasonShareWithGPUResource    = syncer.ReasonShareWithGPUResource
	ReasonResourceClaim           = syncer.ReasonResourceClaim
	ReasonSchedulerNotAllowed     = "SchedulerNotAllowed"
	ReasonPriorityClassNotAllowed = "PriorityClassNotAllowed"
	ReasonRuntimeClassNotAllowed  = "RuntimeClassNotAllowed"
	ReasonQueueNotAllowed         = "QueueNotAllowed"
	ReasonForgedMetadata          = "ForgedReservedMetadata"
	ReasonShareGateRemoved        = "GPUShareGateRemoved"
	ReasonKueueGateRemoved        = syncer.ReasonKueueGateRemoved
	ReasonReservedServiceAccount  = syncer.ReasonReservedServiceAccount
	ReasonAffinityOutsidePool     = syncer.ReasonAffinityOutsidePool
	ReasonKueueQueueNotAllowed    = "KueueQueueNotAllowed"
	ReasonKueuePriorityNotAllowed = "KueuePriorityClassNotAllowed"
	ReasonGateNotAllowed          = "SchedulingGateNotAllowed"
	// A team's NetworkPolicy (policy_network.go).
	ReasonNetworkPolicyAllSources = "NetworkPolicyAdmitsEveryone"
	ReasonNetworkPolicyNamespace  = "NetworkPolicyNamespaceSelector"
	ReasonNetworkPolicyIPBlock    = "NetworkPolicyIPBlock"
	// A team's ResourceClaims and ResourceClaimTemplates (policy_dra.go).
	ReasonDeviceClassNotAllowed = syncer.ReasonDeviceClassNotAllowed
	ReasonDeviceAllocationAll   = syncer.ReasonDeviceAllocationAll
	ReasonDeviceAdminAccess     = syncer.ReasonDeviceAdminAccess
	ReasonDeviceToleration      = syncer.ReasonDeviceToleration
	ReasonDeviceCountAboveLimit = syncer.ReasonDeviceCountAboveLimit
	ReasonClaimStatusProtected  = syncer.ReasonClaimStatusProtected
	// A team's PersistentVolumeClaim (policy_storage.go).
	ReasonClaimNamesVolume = "ClaimNamesVolume"
)
