package testobj

import (
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// ClaimSpecWrapper builds the spec of a ResourceClaim (or of the claims a
// ResourceClaimTemplate makes), one device request at a time.
type ClaimSpecWrapper struct{ resourcev1.ResourceClaimSpec }

// ClaimSpec starts an empty claim spec.
func ClaimSpec() *ClaimSpecWrapper { return &ClaimSpecWrapper{} }

// Obj returns the spec.
func (c *ClaimSpecWrapper) Obj() *resourcev1.ResourceClaimSpec { return &c.ResourceClaimSpec }

// Devices adds request name: count devices of class (ExactCount).
func (c *ClaimSpecWrapper) Devices(name, class string, count int64) *ClaimSpecWrapper {
	c.devices().Requests = append(c.devices().Requests, resourcev1.DeviceRequest{Name: name, Exactly: &resourcev1.ExactDeviceRequest{
		DeviceClassName: class, AllocationMode: resourcev1.DeviceAllocationModeExactCount, Count: count}})
	return c
}

// AllDevices adds request name: every matching device of class.
func (c *ClaimSpecWrapper) AllDevices(name, class string) *ClaimSpecWrapper {
	c.devices().Requests = append(c.devices().Requests, resourcev1.DeviceRequest{Name: name, Exactly: &resourcev1.ExactDeviceRequest{
		DeviceClassName: class, AllocationMode: resourcev1.DeviceAllocationModeAll}})
	return c
}

// FirstAvailable adds request name: the first of subs the scheduler can give.
func (c *ClaimSpecWrapper) FirstAvailable(name string, subs ...resourcev1.DeviceSubRequest) *ClaimSpecWrapper {
	c.devices().Requests = append(c.devices().Requests, resourcev1.DeviceRequest{Name: name, FirstAvailable: subs})
	return c
}

// Sub is one firstAvailable subrequest: count devices of class.
func Sub(name, class string, count int64) resourcev1.DeviceSubRequest {
	return resourcev1.DeviceSubRequest{Name: name, DeviceClassName: class, AllocationMode: resourcev1.DeviceAllocationModeExactCount, Count: count}
}

// AllSub is a firstAvailable subrequest of every matching device of class.
func AllSub(name, class string) resourcev1.DeviceSubRequest {
	return resourcev1.DeviceSubRequest{Name: name, DeviceClassName: class, AllocationMode: resourcev1.DeviceAllocationModeAll}
}

// AdminAccess asks for admin access on the last request.
func (c *ClaimSpecWrapper) AdminAccess() *ClaimSpecWrapper {
	c.last().AdminAccess = ptr.To(true)
	return c
}

// Selector adds a CEL selector to the last request.
func (c *ClaimSpecWrapper) Selector(expr string) *ClaimSpecWrapper {
	e := c.last()
	e.Selectors = append(e.Selectors, resourcev1.DeviceSelector{CEL: &resourcev1.CELDeviceSelector{Expression: expr}})
	return c
}

// TolerateAll makes the last request tolerate every device taint.
func (c *ClaimSpecWrapper) TolerateAll() *ClaimSpecWrapper {
	c.last().Tolerations = append(c.last().Tolerations, resourcev1.DeviceToleration{Operator: resourcev1.DeviceTolerationOpExists})
	return c
}

// Claim is a ResourceClaim namespace/name with the spec.
func (c *ClaimSpecWrapper) Claim(name, namespace string) *resourcev1.ResourceClaim {
	return &resourcev1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace}, Spec: *c.ResourceClaimSpec.DeepCopy()}
}

// Template is a ResourceClaimTemplate namespace/name making claims of the spec.
func (c *ClaimSpecWrapper) Template(name, namespace string) *resourcev1.ResourceClaimTemplate {
	return &resourcev1.ResourceClaimTemplate{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec: resourcev1.ResourceClaimTemplateSpec{Spec: *c.ResourceClaimSpec.DeepCopy()}}
}

func (c *ClaimSpecWrapper) devices() *resourcev1.DeviceClaim { return &c.ResourceClaimSpec.Devices }

func (c *ClaimSpecWrapper) last() *resourcev1.ExactDeviceRequest {
	r := c.ResourceClaimSpec.Devices.Requests
	return r[len(r)-1].Exactly
}
