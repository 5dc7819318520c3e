package installer

import "fmt"

// gpuRuntimeDoc is where the platform reads how to make GPU nodes pass.
const gpuRuntimeDoc = "docs/platform-guide.md \"GPU nodes: the container runtime\""

// RuntimeNote is what `gpuvc install` tells about the agent's container-runtime
// check for the (coalesced) values: how GPU nodes whose NVIDIA container
// toolkit honours NVIDIA_VISIBLE_DEVICES from unprivileged containers are
// treated, and how to configure the GPU Operator so they pass. "" when no
// agent reads real GPUs (agent off, or simulated GPUs: those nodes have the
// hardened configuration).
func RuntimeNote(vals map[string]any) string {
	agent, _ := vals["agent"].(map[string]any)
	if agent == nil {
		return ""
	}
	if enabled, ok := agent["enabled"].(bool); ok && !enabled {
		return ""
	}
	if sim, _ := agent["simulate"].(map[string]any); len(sim) > 0 {
		return ""
	}
	policy := "fence"
	if rt, _ := agent["gpuRuntime"].(map[string]any); rt != nil {
		if p, ok := rt["policy"].(string); ok {
			policy = p
		}
	}
	const fix = "To pass, configure the GPU Operator's toolkit with toolkit.env ACCEPT_NVIDIA_VISIBLE_DEVICES_ENVVAR_WHEN_UNPRIVILEGED=false " +
		"and ACCEPT_NVIDIA_VISIBLE_DEVICES_AS_VOLUME_MOUNTS=true and its device plugin with devicePlugin.env DEVICE_LIST_STRATEGY=volume-mounts " +
		"(or set accept-nvidia-visible-devices-envvar-when-unprivileged = false in /etc/nvidia-container-runtime/config.toml), and set agent.privileged=true " +
		"(the agent then reads NVML as a privileged container). Fractional GPU sharing delivers a share pod's GPU in that very variable, so it gets no GPU on such a node"
	switch policy {
	case "off":
		return "agent.gpuRuntime.policy=off: nothing checks that GPU nodes ignore NVIDIA_VISIBLE_DEVICES from unprivileged containers; " +
			"under the toolkit's default a tenant pod without a GPU request can see every GPU of its node by naming them in that variable (from its own ConfigMap or Secret). See " + gpuRuntimeDoc
	case "warn":
		return fmt.Sprintf("GPU nodes whose NVIDIA container toolkit honours NVIDIA_VISIBLE_DEVICES from unprivileged containers (the toolkit's default) are reported (Node condition GPURuntimeSafe=False, event, metric gpuvc_agent_gpu_runtime_unsafe) "+
			"but not tainted (agent.gpuRuntime.policy=warn): tenant pods there can see GPUs they did not request. %s. See %s", fix, gpuRuntimeDoc)
	}
	return fmt.Sprintf("GPU nodes whose NVIDIA container toolkit honours NVIDIA_VISIBLE_DEVICES from unprivileged containers (the toolkit's default) are tainted gpuvc.dev/gpu-runtime-unsafe=true:NoSchedule "+
		"(Node condition GPURuntimeSafe=False says which file and key) and take no new tenant or reservation pods. %s. See %s", fix, gpuRuntimeDoc)
}
