package testobj

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
)

// InitContainer adds an init container without resources; it runs to completion
// before the regular containers start.
func (p *PodWrapper) InitContainer(name string) *PodWrapper {
	p.Spec.InitContainers = append(p.Spec.InitContainers, corev1.Container{
		Name: name, Image: p.Spec.Containers[0].Image,
		Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{}, Requests: corev1.ResourceList{}},
	})
	return p
}

// Sidecar adds a restartable init container (restartPolicy Always): it keeps
// running beside the regular containers.
func (p *PodWrapper) Sidecar(name string) *PodWrapper {
	p.InitContainer(name)
	p.Spec.InitContainers[len(p.Spec.InitContainers)-1].RestartPolicy = ptr.To(corev1.ContainerRestartPolicyAlways)
	return p
}

// LimitOn sets a limit (and the equal request) on the named regular or init
// container, e.g. LimitOn("warmup", "nvidia.com/gpu", "3").
func (p *PodWrapper) LimitOn(container, name, qty string) *PodWrapper {
	c := p.container(container)
	q := resource.MustParse(qty)
	c.Resources.Limits[corev1.ResourceName(name)] = q
	c.Resources.Requests[corev1.ResourceName(name)] = q
	return p
}

// PrivilegedOn makes the named regular or init container privileged.
func (p *PodWrapper) PrivilegedOn(container string) *PodWrapper {
	p.securityContext(container).Privileged = ptr.To(true)
	return p
}

// AllowPrivilegeEscalation sets allowPrivilegeEscalation=true on the first container.
func (p *PodWrapper) AllowPrivilegeEscalation() *PodWrapper {
	p.securityContext(p.Spec.Containers[0].Name).AllowPrivilegeEscalation = ptr.To(true)
	return p
}

// HostPathOn mounts a host directory into the named regular or init container.
func (p *PodWrapper) HostPathOn(container, volume, path string) *PodWrapper {
	p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{
		Name: volume, VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: path}},
	})
	c := p.container(container)
	c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: volume, MountPath: "/host"})
	return p
}

func (p *PodWrapper) securityContext(container string) *corev1.SecurityContext {
	c := p.container(container)
	if c.SecurityContext == nil {
		c.SecurityContext = &corev1.SecurityContext{}
	}
	return c.SecurityContext
}

// container finds a regular or init container by name; a missing one is a bug
// in the test.
func (p *PodWrapper) container(name string) *corev1.Container {
	for _, list := range [][]corev1.Container{p.Spec.Containers, p.Spec.InitContainers} {
		for i := range list {
			if list[i].Name == name {
				return &list[i]
			}
		}
	}
	panic(fmt.Sprintf("testobj: pod %s has no container %q", p.Name, name))
}

// Edit changes the pod in a way no other builder covers.
func (p *PodWrapper) Edit(change func(*corev1.Pod)) *PodWrapper {
	change(&p.Pod)
	return p
}
