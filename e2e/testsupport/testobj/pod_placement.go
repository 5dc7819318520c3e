package testobj

import corev1 "k8s.io/api/core/v1"

// Toleration adds a toleration as written.
func (p *PodWrapper) Toleration(t corev1.Toleration) *PodWrapper {
	p.Spec.Tolerations = append(p.Spec.Tolerations, t)
	return p
}

// TolerateEverything adds the wildcard toleration (empty key, operator Exists).
func (p *PodWrapper) TolerateEverything() *PodWrapper {
	return p.Toleration(corev1.Toleration{Operator: corev1.TolerationOpExists})
}

// NodeName binds the pod to a node, skipping the scheduler.
func (p *PodWrapper) NodeName(node string) *PodWrapper {
	p.Spec.NodeName = node
	return p
}

// RequireNodeLabel adds a required node affinity term on a node label.
func (p *PodWrapper) RequireNodeLabel(key string, op corev1.NodeSelectorOperator, values ...string) *PodWrapper {
	return p.requireTerm(corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: key, Operator: op, Values: values}}})
}

// RequireNodeNames adds a required node affinity term on metadata.name.
func (p *PodWrapper) RequireNodeNames(names ...string) *PodWrapper {
	return p.requireTerm(corev1.NodeSelectorTerm{MatchFields: []corev1.NodeSelectorRequirement{{
		Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: names,
	}}})
}

func (p *PodWrapper) requireTerm(t corev1.NodeSelectorTerm) *PodWrapper {
	if p.Spec.Affinity == nil {
		p.Spec.Affinity = &corev1.Affinity{}
	}
	if p.Spec.Affinity.NodeAffinity == nil {
		p.Spec.Affinity.NodeAffinity = &corev1.NodeAffinity{}
	}
	na := p.Spec.Affinity.NodeAffinity
	if na.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		na.RequiredDuringSchedulingIgnoredDuringExecution = &corev1.NodeSelector{}
	}
	na.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms = append(
		na.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms, t)
	return p
}

// SchedulerName sets spec.schedulerName.
func (p *PodWrapper) SchedulerName(name string) *PodWrapper {
	p.Spec.SchedulerName = name
	return p
}

// PriorityClass sets spec.priorityClassName.
func (p *PodWrapper) PriorityClass(name string) *PodWrapper {
	p.Spec.PriorityClassName = name
	return p
}

// RuntimeClass sets spec.runtimeClassName.
func (p *PodWrapper) RuntimeClass(name string) *PodWrapper {
	p.Spec.RuntimeClassName = &name
	return p
}

// SchedulingGate adds a scheduling gate.
func (p *PodWrapper) SchedulingGate(name string) *PodWrapper {
	p.Spec.SchedulingGates = append(p.Spec.SchedulingGates, corev1.PodSchedulingGate{Name: name})
	return p
}
