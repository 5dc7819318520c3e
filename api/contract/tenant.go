package contract

// Keys gpuvc reads from what tenants and vCluster write.
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

// KeyVClusterNamespace names, as a label or an annotation on a synced host pod,
// the virtual namespace the pod lives in (kube-system: vCluster's own CoreDNS).
const KeyVClusterNamespace = "vcluster.loft.sh/namespace"
