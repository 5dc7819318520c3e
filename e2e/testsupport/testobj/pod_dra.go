package testobj

import corev1 "k8s.io/api/core/v1"

// ResourceClaim adds a Dynamic Resource Allocation claim made from template to
// the pod (spec.resourceClaims) and lets the first container use it.
func (p *PodWrapper) ResourceClaim(name, template string) *PodWrapper {
	p.Spec.ResourceClaims = append(p.Spec.ResourceClaims, corev1.PodResourceClaim{Name: name, ResourceClaimTemplateName: &template})
	c := &p.Spec.Containers[0]
	c.Resources.Claims = append(c.Resources.Claims, corev1.ResourceClaim{Name: name})
	return p
}

// NamedResourceClaim adds the existing ResourceClaim claim of the pod's
// namespace to the pod and lets the first container use it.
func (p *PodWrapper) NamedResourceClaim(name, claim string) *PodWrapper {
	p.Spec.ResourceClaims = append(p.Spec.ResourceClaims, corev1.PodResourceClaim{Name: name, ResourceClaimName: &claim})
	c := &p.Spec.Containers[0]
	c.Resources.Claims = append(c.Resources.Claims, corev1.ResourceClaim{Name: name})
	return p
}
