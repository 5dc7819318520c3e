package syncer

// Keys gpuvc owns on host pods. Tenants cannot set or change any gpuvc.dev/ key:
// on CREATE the webhook replaces them with its own, on UPDATE it restores them from
// the stored pod (only TrustedUsers, e.g. the share controller, may change them).
const (
	// ReservedPrefix marks labels and annotations only gpuvc may write.
	ReservedPrefix = "gpuvc.dev/"

	// LabelTeam is set on every admitted pod of a team namespace.
	LabelTeam = "gpuvc.dev/team"
	// LabelPool is the node label and taint key of node pools; namespaces carry it
	// too, naming the team's pool.
	LabelPool = "gpuvc.dev/pool"
	// AnnotationRole records whether the pod was admitted as a workload or as the
	// team's vCluster control plane; UPDATEs read it from the stored pod.
	AnnotationRole = "gpuvc.dev/role"
	// AnnotationDecisions records, as JSON, what the mutating webhook changed on
	// CREATE; the validating webhook turns it into events once the pod has a UID.
	AnnotationDecisions = "gpuvc.dev/decisions"

	// LabelGPUShare ("true") marks a fractional pod waiting for, or holding, a
	// share of a GPU; the share controller selects on it.
	LabelGPUShare = "gpuvc.dev/gpu-share"
	// AnnotationGPUFraction is the validated fraction ("0.5"), canonical form.
	AnnotationGPUFraction = "gpuvc.dev/gpu-fraction"
	// AnnotationGPUMemory is the validated memory share in MiB ("20000").
	AnnotationGPUMemory = "gpuvc.dev/gpu-memory-mib"
	// AnnotationShareConfigMap names the ConfigMap every container reads its GPU
	// environment from (NVIDIA_VISIBLE_DEVICES, GPU_PORTION); the share
	// controller creates it before it removes the gate.
	AnnotationShareConfigMap = "gpuvc.dev/gpu-share-configmap"
	// GateGPUShare holds a fractional pod until the share controller has given
	// it a GPU.
	GateGPUShare = "gpuvc.dev/gpu-share"
	// ShareConfigMapPrefix starts every share ConfigMap name; tenants may not
	// reference ConfigMaps with this prefix themselves.
	ShareConfigMapPrefix = "gpuvc-share-"
)

// Roles a pod can be admitted as.
const (
	RoleWorkload     = "workload"
	RoleControlPlane = "control-plane"
)

// Keys gpuvc reads from what tenants write.
const (
	// KAI-Scheduler compatible share annotations.
	AnnotationKAIFraction        = "gpu-fraction"
	AnnotationKAIMemory          = "gpu-memory"
	AnnotationKAIFractionDevices = "gpu-fraction-num-devices"
	// LabelKAIQueue selects a KAI-Scheduler queue; the team policy decides it.
	LabelKAIQueue = "kai.scheduler/queue"
	// LabelVClusterManagedBy is set by vCluster on every pod it syncs to the host.
	LabelVClusterManagedBy = "vcluster.loft.sh/managed-by"
)

// NVIDIA device-plugin resources.
const (
	ResourceGPU       = "nvidia.com/gpu"
	ResourceMIGPrefix = "nvidia.com/mig-"
	resourceNVIDIA    = "nvidia.com/"
)

// DefaultSchedulerName is what the API server defaults spec.schedulerName to.
const DefaultSchedulerName = "default-scheduler"

// DefaultSystemPool is the pool control-plane pods are pinned to.
const DefaultSystemPool = "system"
