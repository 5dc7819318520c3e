package testobj

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

// Privileged makes the first container privileged.
func (p *PodWrapper) Privileged() *PodWrapper {
	c := &p.Spec.Containers[0]
	if c.SecurityContext == nil {
		c.SecurityContext = &corev1.SecurityContext{}
	}
	c.SecurityContext.Privileged = ptr.To(true)
	return p
}

// HostPath mounts a host directory into the first container.
func (p *PodWrapper) HostPath(volume, path string) *PodWrapper {
	p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{
		Name: volume, VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: path}},
	})
	c := &p.Spec.Containers[0]
	c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: volume, MountPath: "/host"})
	return p
}

// HostNetwork puts the pod in the node's network namespace.
func (p *PodWrapper) HostNetwork() *PodWrapper { p.Spec.HostNetwork = true; return p }

// HostPID puts the pod in the node's PID namespace.
func (p *PodWrapper) HostPID() *PodWrapper { p.Spec.HostPID = true; return p }

// HostIPC puts the pod in the node's IPC namespace.
func (p *PodWrapper) HostIPC() *PodWrapper { p.Spec.HostIPC = true; return p }

// Env sets an environment variable on the first container.
func (p *PodWrapper) Env(name, value string) *PodWrapper {
	c := &p.Spec.Containers[0]
	c.Env = append(c.Env, corev1.EnvVar{Name: name, Value: value})
	return p
}

// EnvFromConfigMap makes the first container read a ConfigMap as environment.
func (p *PodWrapper) EnvFromConfigMap(name string) *PodWrapper {
	c := &p.Spec.Containers[0]
	c.EnvFrom = append(c.EnvFrom, corev1.EnvFromSource{
		ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: name}},
	})
	return p
}

// ContainerSecurity edits the first container's security context.
func (p *PodWrapper) ContainerSecurity(edit func(sc *corev1.SecurityContext)) *PodWrapper {
	edit(p.securityContext(p.Spec.Containers[0].Name))
	return p
}

// PodSecurity edits the pod's security context.
func (p *PodWrapper) PodSecurity(edit func(sc *corev1.PodSecurityContext)) *PodWrapper {
	if p.Spec.SecurityContext == nil {
		p.Spec.SecurityContext = &corev1.PodSecurityContext{}
	}
	edit(p.Spec.SecurityContext)
	return p
}

// AddCapabilities adds Linux capabilities to the first container.
func (p *PodWrapper) AddCapabilities(caps ...corev1.Capability) *PodWrapper {
	return p.ContainerSecurity(func(sc *corev1.SecurityContext) {
		if sc.Capabilities == nil {
			sc.Capabilities = &corev1.Capabilities{}
		}
		sc.Capabilities.Add = append(sc.Capabilities.Add, caps...)
	})
}

// HostPort publishes containerPort on the node's port hostPort.
func (p *PodWrapper) HostPort(containerPort, hostPort int32) *PodWrapper {
	c := &p.Spec.Containers[0]
	c.Ports = append(c.Ports, corev1.ContainerPort{ContainerPort: containerPort, HostPort: hostPort})
	return p
}

// Sysctl sets a namespaced sysctl for the pod.
func (p *PodWrapper) Sysctl(name, value string) *PodWrapper {
	return p.PodSecurity(func(sc *corev1.PodSecurityContext) {
		sc.Sysctls = append(sc.Sysctls, corev1.Sysctl{Name: name, Value: value})
	})
}
