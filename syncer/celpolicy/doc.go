// Package celpolicy is the second pod fence of team namespaces: in-tree CEL
// ValidatingAdmissionPolicies (admissionregistration.k8s.io/v1) that the API
// server enforces by itself, so they hold while the syncer's webhook is down,
// unreachable or misconfigured.
//
// The policy gpuvc-pod-fence repeats, as refusals, what the webhook fences:
// the team's node pool (nodeSelector, tolerations, no nodeName), node access
// (privileged, privilege escalation, hostPath, host namespaces, and the rest of
// Pod Security baseline: capabilities, seccomp, AppArmor, procMount, sysctls,
// hostPorts, hostProcess, SELinux; NVIDIA device variables, other pods' share
// ConfigMaps), GPU devices per pod (whole GPUs and
// MIG instances, at the pod's peak) and the gpu-fraction / gpu-memory
// annotations. Each team namespace carries its parameters in the ConfigMap
// gpuvc-admission-params; a namespace without it refuses every pod. The policy
// gpuvc-params-guard keeps anyone but gpuvc from writing that ConfigMap.
//
// The manager applies ClusterObjects once and TeamParams per team; Install does
// the former with client-go for tests and the CLI. See docs/celpolicy.md.
package celpolicy
