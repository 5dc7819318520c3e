package contract

// Keys of GPU health, written by `gpuvc agent` on its Node and read by the
// share controller.
const (
	// ConditionGPUHealthy is the Node condition the agent keeps: True while
	// every GPU is healthy, False naming the failed GPUs (index, UUID, XID).
	ConditionGPUHealthy = "GPUHealthy"
	// AnnotationUnhealthyGPUs lists the UUIDs of the node's failed GPUs,
	// comma-separated; absent when all are healthy. The share controller puts
	// no new share on a reservation holding one of them.
	AnnotationUnhealthyGPUs = "gpuvc.dev/unhealthy-gpus"
	// TaintGPUUnhealthy (effect NoSchedule, value "true") keeps new pods off a
	// node with a failed GPU, when the agent's policy taints.
	TaintGPUUnhealthy = "gpuvc.dev/gpu-unhealthy"
)
