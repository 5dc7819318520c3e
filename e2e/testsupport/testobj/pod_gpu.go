package testobj

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// GPUFraction asks for part of a GPU with the KAI-style gpu-fraction annotation.
func (p *PodWrapper) GPUFraction(f string) *PodWrapper { return p.Annotation("gpu-fraction", f) }

// GPUMemory asks for part of a GPU by memory (MiB) with the gpu-memory annotation.
func (p *PodWrapper) GPUMemory(mib string) *PodWrapper { return p.Annotation("gpu-memory", mib) }

// Container adds another container without resources.
func (p *PodWrapper) Container(name string) *PodWrapper {
	p.Spec.Containers = append(p.Spec.Containers, corev1.Container{
		Name: name, Image: p.Spec.Containers[0].Image,
		Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{}, Requests: corev1.ResourceList{}},
	})
	return p
}

// OwnedBy sets a controller owner reference.
func (p *PodWrapper) OwnedBy(apiVersion, kind, name string, uid types.UID) *PodWrapper {
	p.OwnerReferences = append(p.OwnerReferences, metav1.OwnerReference{
		APIVersion: apiVersion, Kind: kind, Name: name, UID: uid, Controller: ptr.To(true),
	})
	return p
}
