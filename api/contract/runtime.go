package contract

// Keys of the GPU container-runtime check, written by `gpuvc agent` on its
// Node (gpu/runtimeconfig decides, docs/agent.md).
const (
	// ConditionGPURuntimeSafe is the Node condition the agent keeps: True
	// while the node's NVIDIA container toolkit ignores NVIDIA_VISIBLE_DEVICES
	// in unprivileged containers, False (reason: which key of which file)
	// while a pod without a GPU request could name the node's GPUs in that
	// variable.
	ConditionGPURuntimeSafe = "GPURuntimeSafe"
	// TaintGPURuntimeUnsafe (effect NoSchedule, value "true") keeps tenant
	// pods off such a node, unless the agent only warns. No tenant pod may
	// tolerate it (the webhook and the CEL fence refuse tolerations of
	// gpuvc.dev/ keys other than the pool taint); only the agent itself does.
	TaintGPURuntimeUnsafe = "gpuvc.dev/gpu-runtime-unsafe"
)
