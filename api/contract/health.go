package contract

// Keys of GPU health, written by `gpuvc agent` on its Node and read by the
// share controller and the manager's accounting.
const (
	// ConditionGPUHealthy is the Node condition the agent keeps: True while
	// every GPU is in service, False naming the GPUs out (index, UUID, XID,
	// probation or permanent quarantine).
	ConditionGPUHealthy = "GPUHealthy"
	// AnnotationUnhealthyGPUs lists the UUIDs of the node's GPUs out of service
	// (in probation or permanently quarantined), comma-separated; absent when
	// all are in service. The share controller puts no new share on a
	// reservation holding one of them.
	AnnotationUnhealthyGPUs = "gpuvc.dev/unhealthy-gpus"
	// TaintGPUUnhealthy (effect NoSchedule, value "true") keeps new pods off a
	// node whose GPUs are all out (or, with the agent's
	// --gpu-failure-node-taint=any, any of them), when the agent's policy
	// taints.
	TaintGPUUnhealthy = "gpuvc.dev/gpu-unhealthy"
	// AnnotationGPUQuarantine is the agent's quarantine record of the node's
	// GPUs, JSON: per GPU UUID its state (InService, Probation, Permanent),
	// failures, returns from probation, the last error and the probation's
	// end. A restarted agent continues from it.
	AnnotationGPUQuarantine = "gpuvc.dev/gpu-quarantine"
	// AnnotationGPUQuarantineClear is set by an operator to return GPUs to
	// service: comma-separated UUIDs (or "all"). The agent returns them (a
	// permanent quarantine included), resets their failure count and removes
	// the annotation.
	AnnotationGPUQuarantineClear = "gpuvc.dev/gpu-quarantine-clear"
	// AnnotationGPUHealthCordoned marks a cordon the agent set itself (all
	// GPUs out, policy cordon-drain): the agent lifts that cordon, and only
	// that one, when a GPU returns.
	AnnotationGPUHealthCordoned = "gpuvc.dev/gpu-health-cordoned"
	// AnnotationGPUSecondsLost is the GPU-seconds each team lost on this node
	// to GPU failures, JSON {"<team>": seconds}, cumulative: the GPU time the
	// pods drained for a failed GPU had held since they started. The manager's
	// accounting credits its increase to the team's ledger (kind
	// lost-to-gpu-failure).
	AnnotationGPUSecondsLost = "gpuvc.dev/gpu-seconds-lost"
)
