package syncer

import (
	"fmt"
	"strings"

	"github.com/gpuvc/gpuvc/api/contract"
)

// Security checks: things a tenant pod could use to reach the node, and thereby
// every GPU and every other team's pods on it. Together with baseline.go they
// are the Pod Security "baseline" profile — privileged, hostPath, host
// namespaces here; capabilities, seccomp, AppArmor, procMount, sysctls,
// hostPorts, Windows hostProcess and SELinux there — plus gpuvc's own rules (GPU
// device env, share ConfigMaps, the reservation account). Pod Security
// Admission is a second layer; these hold even if a namespace's PSA labels are
// wrong or the team asked for podSecurity: privileged. They apply to gpuvc's
// own pods too, which keep to the restricted profile.

func checkPrivileged(in *Input) (string, string, bool) {
	for _, c := range allContainers(in.Pod) {
		if c.sc != nil && c.sc.Privileged != nil && *c.sc.Privileged {
			return ReasonPrivileged, fmt.Sprintf(
				"%s.securityContext.privileged=true is not allowed in team namespaces (limit: unprivileged containers only): a privileged container sees every GPU of the node; remove it and request GPUs through resources or a gpu-fraction annotation",
				c.path), true
		}
	}
	return "", "", false
}

func checkHostPath(in *Input) (string, string, bool) {
	for i, v := range in.Pod.Spec.Volumes {
		if v.HostPath != nil {
			return ReasonHostPath, fmt.Sprintf(
				"spec.volumes[%d] (%q) mounts hostPath %q, which is not allowed in team namespaces (limit: no hostPath volumes); use an emptyDir, a ConfigMap or a PersistentVolumeClaim",
				i, v.Name, v.HostPath.Path), true
		}
	}
	return "", "", false
}

func checkHostNamespaces(in *Input) (string, string, bool) {
	s := in.Pod.Spec
	for _, f := range []struct {
		field string
		set   bool
	}{{"spec.hostNetwork", s.HostNetwork}, {"spec.hostPID", s.HostPID}, {"spec.hostIPC", s.HostIPC}} {
		if f.set {
			return ReasonHostNamespace, fmt.Sprintf(
				"%s=true is not allowed in team namespaces (limit: pods use their own network, PID and IPC namespaces); remove it, and expose ports through a Service",
				f.field), true
		}
	}
	return "", "", false
}

// gpuDeviceEnv are variables the NVIDIA container runtime reads to decide which
// devices to expose; set by a tenant they bypass the device plugin.
var gpuDeviceEnv = contract.DeviceEnv()

func checkGPUEnv(in *Input) (string, string, bool) {
	for _, c := range allContainers(in.Pod) {
		for _, e := range c.env {
			for _, name := range gpuDeviceEnv {
				if e.Name == name {
					return ReasonGPUEnv, fmt.Sprintf(
						"%s.env[%s]=%q is not allowed (limit: GPUs come only from requests): the NVIDIA runtime would expose GPUs the pod was not given; remove it and request nvidia.com/gpu, a MIG profile or a gpu-fraction annotation",
						c.path, e.Name, e.Value), true
				}
			}
		}
	}
	return "", "", false
}

// checkReservedConfigMaps refuses references to share ConfigMaps (they carry a GPU
// assignment), except a share pod's reference to its own.
func checkReservedConfigMaps(in *Input) (string, string, bool) {
	own := ""
	if hasShareAnnotations(in.Pod) && in.Pod.Name != "" {
		own = shareConfigMapName(in.Pod.Name)
	}
	deny := func(field, name string) (string, string, bool) {
		return ReasonReservedConfigMap, fmt.Sprintf(
			"%s=%s refers to a ConfigMap named %s*, a prefix reserved for gpuvc's GPU share assignments (limit: a pod reads only its own share); rename your ConfigMap",
			field, name, contract.ShareConfigMapPrefix), true
	}
	reserved := func(name string) bool { return strings.HasPrefix(name, contract.ShareConfigMapPrefix) }
	for _, c := range allContainers(in.Pod) {
		for i, e := range c.env {
			if e.ValueFrom != nil && e.ValueFrom.ConfigMapKeyRef != nil && reserved(e.ValueFrom.ConfigMapKeyRef.Name) {
				return deny(fmt.Sprintf("%s.env[%d].valueFrom.configMapKeyRef.name", c.path, i), e.ValueFrom.ConfigMapKeyRef.Name)
			}
		}
		for i, e := range c.envFrom {
			if e.ConfigMapRef != nil && reserved(e.ConfigMapRef.Name) && e.ConfigMapRef.Name != own {
				return deny(fmt.Sprintf("%s.envFrom[%d].configMapRef.name", c.path, i), e.ConfigMapRef.Name)
			}
		}
	}
	for i, v := range in.Pod.Spec.Volumes {
		if v.ConfigMap != nil && reserved(v.ConfigMap.Name) {
			return deny(fmt.Sprintf("spec.volumes[%d].configMap.name", i), v.ConfigMap.Name)
		}
		if v.Projected != nil {
			for j, s := range v.Projected.Sources {
				if s.ConfigMap != nil && reserved(s.ConfigMap.Name) {
					return deny(fmt.Sprintf("spec.volumes[%d].projected.sources[%d].configMap.name", i, j), s.ConfigMap.Name)
				}
			}
		}
	}
	return "", "", false
}

// ControlPlaneServiceAccount is the host ServiceAccount of a team's vCluster
// control plane (vCluster's chart: vc-<release>). Its token carries the
// control plane's host rights (pods, services, secrets, configmaps,
// statefulsets of the namespace): no workload runs as it.
func ControlPlaneServiceAccount(release string) string { return "vc-" + release }

// checkReservedServiceAccount keeps the namespace's platform identities off
// workload pods: gpuvc-reserve (gpuvc's reservation pods; only gpuvc creates
// them) and the vCluster control plane's account (only the control plane pod
// runs as it). Workloads run as vCluster's workload account vc-workload-<release>
// (vCluster sets it on every synced pod) or default.
func checkReservedServiceAccount(in *Input) (string, string, bool) {
	sa := in.Pod.Spec.ServiceAccountName
	switch {
	case sa == contract.ReserveServiceAccount && !in.Trusted:
		return ReasonReservedServiceAccount, fmt.Sprintf(
			"spec.serviceAccountName=%s is reserved for gpuvc's GPU reservation pods (limit: only gpuvc may use it); remove it or use your own service account",
			sa), true
	case in.Policy.VClusterName != "" && sa == ControlPlaneServiceAccount(in.Policy.VClusterName) && in.Role != contract.RoleControlPlane:
		return ReasonReservedServiceAccount, fmt.Sprintf(
			"spec.serviceAccountName=%s is the identity of team %s's vCluster control plane, with its rights on the host namespace "+
				"(limit: workload pods run as vc-workload-%s or default); remove spec.serviceAccountName",
			sa, in.Policy.Team, in.Policy.VClusterName), true
	}
	return "", "", false
}
