// Package testobj builds the Kubernetes objects tests create, so tests state what
// matters ("a pod asking one GPU in pool a100") instead of repeating YAML.
package testobj

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuvc/gpuvc/api/contract"
	"github.com/gpuvc/gpuvc/kind/nodepool"
)

// PlaceholderImage is the image of Pod's container: never pullable; a backend
// whose nodes start containers loads an image of that name (e2e/suite's kind).
const PlaceholderImage = "registry.invalid/gpuvc/workload:test"

// PodWrapper builds a Pod.
type PodWrapper struct{ corev1.Pod }

// Pod returns a single-container pod that does nothing in particular.
func Pod(name, namespace string) *PodWrapper {
	return &PodWrapper{corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{
				Name:      "main",
				Image:     PlaceholderImage,
				Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{}, Requests: corev1.ResourceList{}},
			}},
		},
	}}
}

// Obj returns the built pod.
func (p *PodWrapper) Obj() *corev1.Pod { return p.Pod.DeepCopy() }

// Limit sets a limit (and the equal request) on the first container, e.g.
// Limit("nvidia.com/gpu", "1"). Extended resources need request == limit.
func (p *PodWrapper) Limit(name, qty string) *PodWrapper {
	q := resource.MustParse(qty)
	c := &p.Spec.Containers[0]
	c.Resources.Limits[corev1.ResourceName(name)] = q
	c.Resources.Requests[corev1.ResourceName(name)] = q
	return p
}

// GPUs asks for n whole GPUs.
func (p *PodWrapper) GPUs(n string) *PodWrapper { return p.Limit(contract.ResourceGPU, n) }

// MIG asks for n slices of a MIG profile such as "1g.10gb".
func (p *PodWrapper) MIG(profile, n string) *PodWrapper {
	return p.Limit(nodepool.MIGResource(profile), n)
}

// InPool tolerates a pool's taint and selects its nodes.
func (p *PodWrapper) InPool(pool string) *PodWrapper {
	return p.TolerateTaint(contract.LabelPool, pool).NodeSelector(contract.LabelPool, pool)
}

// TolerateTaint adds a toleration for key=value:NoSchedule.
func (p *PodWrapper) TolerateTaint(key, value string) *PodWrapper {
	p.Spec.Tolerations = append(p.Spec.Tolerations, corev1.Toleration{
		Key: key, Operator: corev1.TolerationOpEqual, Value: value, Effect: corev1.TaintEffectNoSchedule,
	})
	return p
}

// NodeSelector adds a node selector term.
func (p *PodWrapper) NodeSelector(key, value string) *PodWrapper {
	if p.Spec.NodeSelector == nil {
		p.Spec.NodeSelector = map[string]string{}
	}
	p.Spec.NodeSelector[key] = value
	return p
}

// Label sets a label.
func (p *PodWrapper) Label(key, value string) *PodWrapper {
	if p.Labels == nil {
		p.Labels = map[string]string{}
	}
	p.Labels[key] = value
	return p
}

// Annotation sets an annotation.
func (p *PodWrapper) Annotation(key, value string) *PodWrapper {
	if p.Annotations == nil {
		p.Annotations = map[string]string{}
	}
	p.Annotations[key] = value
	return p
}
