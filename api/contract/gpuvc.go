package contract

// Keys gpuvc owns on host objects. Tenants cannot set or change any gpuvc.dev/
// key: on CREATE the webhook replaces them with its own, on UPDATE it restores
// them from the stored pod (only the syncer's trusted users, e.g. the share
// controller, may change them).
const (
	// ReservedPrefix marks labels and annotations only gpuvc may write.
	ReservedPrefix = "gpuvc.dev/"

	// LabelTeam is set on a team's host namespace, on every object the manager
	// creates for it and on every admitted pod of a team namespace.
	LabelTeam = "gpuvc.dev/team"
	// LabelPool is the node label and the NoSchedule taint key of node pools;
	// team namespaces carry it too, naming the team's pool.
	LabelPool = "gpuvc.dev/pool"
	// LabelSimulated ("true") marks nodes whose GPUs are simulated: kwok nodes
	// (set by kind/nodepool) and real kubelets serving simulated GPUs through
	// gpuvc's device plugin (kind trial workers, the local real node; set by the
	// agent). It says nothing about whether containers run there: the share
	// controller invents reservation UUIDs only on kwok nodes
	// (AnnotationKwokNode); elsewhere `gpuvc reserve` reports the device the
	// kubelet assigned.
	LabelSimulated = "gpuvc.dev/simulated"
	// AnnotationGPUInventory holds a node's GPU inventory as JSON, published
	// by `gpuvc agent`.
	AnnotationGPUInventory = "gpuvc.dev/gpu-inventory"

	// AnnotationRole records whether the pod was admitted as a workload or as the
	// team's vCluster control plane; UPDATEs read it from the stored pod.
	AnnotationRole = "gpuvc.dev/role"
	// AnnotationDecisions records, as JSON, what the mutating webhook changed on
	// CREATE; the validating webhook turns it into events once the pod has a UID.
	AnnotationDecisions = "gpuvc.dev/decisions"
)

// Roles a pod can be admitted as (values of AnnotationRole).
const (
	RoleWorkload     = "workload"
	RoleControlPlane = "control-plane"
)

// DefaultSystemPool is the pool control-plane pods are pinned to.
const DefaultSystemPool = "system"

// DefaultSchedulerName is what the API server defaults spec.schedulerName to.
const DefaultSchedulerName = "default-scheduler"
