package v1alpha1

// Placement widens where a team's pods may run within its pool. A tenant pod
// may tolerate only its pool's taint (gpuvc adds it), the taints Kubernetes
// puts on a node that is not ready or unreachable (NoExecute, for at most 300
// seconds, as Kubernetes' own default), and what AllowedTolerations lists;
// gpuvc removes every other toleration (docs/syncer.md, "Tolerations").
type Placement struct {
	// AllowedTolerations are tolerations the team's pods may keep, compared by
	// key, operator, value and effect (e.g. a taint the pool's nodes carry for
	// a reason of their own). Never a wildcard nor a gpuvc.dev/ key: gpuvc's own
	// taints (pools, failing GPUs, unsafe runtimes) keep pods off for a reason.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=16
	AllowedTolerations []AllowedToleration `json:"allowedTolerations,omitempty"`
}

// AllowedToleration is one toleration a team's pods may keep.
// +kubebuilder:validation:XValidation:rule="!self.key.startsWith('gpuvc.dev/')",messageExpression="'spec.placement.allowedTolerations: key ' + self.key + ' is a gpuvc taint (pools, failing GPUs, unsafe runtimes), which tenants may not tolerate; remove the entry'"
// +kubebuilder:validation:XValidation:rule="!has(self.operator) || self.operator != 'Exists' || !has(self.value) || size(self.value) == 0",message="spec.placement.allowedTolerations: operator Exists takes no value; remove the value or use Equal"
type AllowedToleration struct {
	// Key of the taint. A wildcard (empty key) is not allowed.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=316
	// +kubebuilder:validation:Pattern=`^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$`
	Key string `json:"key"`
	// Operator is Equal (default) or Exists.
	// +optional
	// +kubebuilder:validation:Enum=Equal;Exists
	Operator string `json:"operator,omitempty"`
	// Value of the taint, with Equal.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	Value string `json:"value,omitempty"`
	// Effect is NoSchedule, PreferNoSchedule or NoExecute; empty tolerates every effect.
	// +optional
	// +kubebuilder:validation:Enum=NoSchedule;PreferNoSchedule;NoExecute
	Effect string `json:"effect,omitempty"`
}
