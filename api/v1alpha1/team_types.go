package v1alpha1

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Team is one tenant team: its own virtual cluster on the shared host, its GPU quota
// and the node pool its pods run on.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=tm
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Pool",type=string,JSONPath=`.spec.pool`
// +kubebuilder:printcolumn:name="GPUs",type=integer,JSONPath=`.spec.quota.gpus`,description="whole-GPU quota"
// +kubebuilder:printcolumn:name="Used",type=integer,JSONPath=`.status.gpuUsage.gpus`,description="whole GPUs requested by running and pending pods"
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`,priority=1
// +kubebuilder:printcolumn:name="Namespace",type=string,JSONPath=`.status.namespace`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="size(self.metadata.name) <= 40",message="metadata.name: a team name has at most 40 characters (it names the host namespace team-<name> and the vCluster's objects)"
// +kubebuilder:validation:XValidation:rule="oldSelf.hasValue() || self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$')",optionalOldSelf=true,messageExpression="'metadata.name: ' + self.metadata.name + ' is not a DNS-1035 label: use lowercase letters, digits and -, starting with a letter and ending with a letter or digit (e.g. fraud-ml); it names the host namespace team-<name> and the vCluster release'"
type Team struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   TeamSpec   `json:"spec"`
	Status TeamStatus `json:"status,omitempty"`
}

// TeamList is a list of Teams.
//
// +kubebuilder:object:root=true
type TeamList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Team `json:"items"`
}

// TeamSpec is what a platform engineer decides for a team.
//
// +kubebuilder:validation:XValidation:rule="!has(self.maxGPUsPerPod) || !has(self.quota.gpus) || self.maxGPUsPerPod <= self.quota.gpus",message="spec.maxGPUsPerPod: cannot exceed spec.quota.gpus; lower maxGPUsPerPod or raise the quota"
// +kubebuilder:validation:XValidation:rule="!has(self.gpuSharing) || !has(self.gpuSharing.wholeGPUAs) || (has(self.quota.mig) && self.gpuSharing.wholeGPUAs in self.quota.mig)",message="spec.gpuSharing.wholeGPUAs: the MIG profile whole-GPU requests map to needs a quota in spec.quota.mig"
// +kubebuilder:validation:XValidation:rule="!has(self.gpuSharing) || !has(self.gpuSharing.fractions) || !self.gpuSharing.fractions || (has(self.quota.gpus) && self.quota.gpus >= 1)",message="spec.gpuSharing.fractions: fractional GPUs are carved from whole GPUs the team holds; set spec.quota.gpus to at least 1"
// +kubebuilder:validation:XValidation:rule="!has(self.queueing) || !has(self.queueing.borrowingLimit) || !has(self.queueing.borrowingLimit.mig) || self.queueing.borrowingLimit.mig.all(p, has(self.quota.mig) && p in self.quota.mig)",message="spec.queueing.borrowingLimit.mig: a MIG profile can be borrowed only if spec.quota.mig lists it (a guarantee of 0 is fine); add the profile there"
// +kubebuilder:validation:XValidation:rule="!has(self.queueing) || !has(self.queueing.maxQueued) || !has(self.queueing.maxQueued.mig) || self.queueing.maxQueued.mig.all(p, has(self.quota.mig) && p in self.quota.mig)",message="spec.queueing.maxQueued.mig: a MIG profile can queue only if spec.quota.mig lists it (a guarantee of 0 is fine); add the profile there or remove it here"
// +kubebuilder:validation:XValidation:rule="!has(self.queueing) || !has(self.queueing.lendingLimit) || !has(self.queueing.lendingLimit.gpus) || self.queueing.lendingLimit.gpus <= (has(self.quota.gpus) ? self.quota.gpus : 0)",message="spec.queueing.lendingLimit.gpus: cannot exceed the guarantee spec.quota.gpus; lower the lending limit or raise the guarantee"
// +kubebuilder:validation:XValidation:rule="!has(self.queueing) || !has(self.queueing.lendingLimit) || !has(self.queueing.lendingLimit.mig) || self.queueing.lendingLimit.mig.all(p, has(self.quota.mig) && p in self.quota.mig && self.queueing.lendingLimit.mig[p] <= self.quota.mig[p])",message="spec.queueing.lendingLimit.mig: each profile must be listed in spec.quota.mig and lend at most its guarantee there"
// +kubebuilder:validation:XValidation:rule="!has(self.dra) || !has(self.queueing)",message="spec.dra: cannot be combined with spec.queueing: Kueue v0.17.0 counts no DRA devices (its DRA integration starts at v0.18), so the team's claims would bypass its queue; remove spec.dra or spec.queueing"
type TeamSpec struct {
	// Members get cluster-admin inside the team's virtual cluster.
	// +optional
	// +listType=map
	// +listMapKey=kind
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=256
	Members []Member `json:"members,omitempty"`

	// Pool is the node pool the team's GPU pods run on: nodes labelled and tainted
	// gpuvc.dev/pool=<pool>. One pool per team in v1alpha1.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Pool string `json:"pool"`

	// Quota bounds what the team's pods may request on the host, all pods together.
	// With Queueing, its gpus and mig are the team's guaranteed share instead.
	Quota Quota `json:"quota"`

	// Queueing makes the GPU quota elastic on Kueue (team_queue_types.go).
	// +optional
	Queueing *Queueing `json:"queueing,omitempty"`

	// DRA lets the team's pods ask for devices through ResourceClaims
	// (team_dra_types.go). Off by default: pods with claims are refused.
	// +optional
	DRA *DRA `json:"dra,omitempty"`

	// Placement widens where the team's pods may run within its pool.
	// +optional
	Placement *Placement `json:"placement,omitempty"`

	// MaxGPUsPerPod bounds the whole GPUs one pod may request.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=64
	MaxGPUsPerPod *int32 `json:"maxGPUsPerPod,omitempty"`

	// GPUSharing says how requests that are not whole GPUs are served.
	// +optional
	GPUSharing *GPUSharing `json:"gpuSharing,omitempty"`

	// PodSecurity is the Pod Security Standard enforced in the team's host namespace.
	// +optional
	// +kubebuilder:default=baseline
	// +kubebuilder:validation:Enum=privileged;baseline;restricted
	PodSecurity string `json:"podSecurity,omitempty"`

	// Network fences the team's pods on the host network.
	// +optional
	Network *Network `json:"network,omitempty"`

	// VCluster tunes the team's virtual cluster.
	// +optional
	VCluster *VClusterSpec `json:"vcluster,omitempty"`

	// Idle says what happens to an unused vCluster and to idle GPU pods
	// (team_idle_types.go).
	// +optional
	Idle *Idle `json:"idle,omitempty"`
}

// Member is a user or group given access to the team's virtual cluster.
type Member struct {
	// +kubebuilder:validation:Enum=User;Group
	Kind string `json:"kind"`
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
}

// Quota is a team's host-side budget. Every field is optional; an absent field is
// not limited by gpuvc (the host may have its own limits).
//
// +kubebuilder:validation:XValidation:rule="!has(self.mig) || self.mig.all(p, p.matches('^[1-7]g[.][0-9]+gb([+]me)?$'))",message="spec.quota.mig: keys are MIG profiles such as 1g.10gb, 3g.40gb or 1g.10gb+me"
// +kubebuilder:validation:XValidation:rule="!has(self.mig) || self.mig.all(p, !p.matches('^[1-7]g[.][0-9]+gb([+]me)?$') || p in ['1g.5gb', '1g.5gb+me', '1g.6gb', '1g.6gb+me', '1g.10gb', '1g.10gb+me', '1g.12gb', '1g.12gb+me', '1g.18gb', '1g.18gb+me', '1g.20gb', '1g.24gb', '1g.35gb', '2g.10gb', '2g.12gb', '2g.12gb+me', '2g.20gb', '2g.24gb', '2g.35gb', '3g.20gb', '3g.40gb', '3g.47gb', '3g.48gb', '3g.71gb', '4g.20gb', '4g.24gb', '4g.40gb', '4g.47gb', '4g.48gb', '4g.71gb', '7g.40gb', '7g.80gb', '7g.94gb', '7g.96gb', '7g.141gb'])",message="spec.quota.mig: no known GPU model offers this MIG profile; known profiles: 1g.5gb, 1g.5gb+me, 1g.6gb, 1g.6gb+me, 1g.10gb, 1g.10gb+me, 1g.12gb, 1g.12gb+me, 1g.18gb, 1g.18gb+me, 1g.20gb, 1g.24gb, 1g.35gb, 2g.10gb, 2g.12gb, 2g.12gb+me, 2g.20gb, 2g.24gb, 2g.35gb, 3g.20gb, 3g.40gb, 3g.47gb, 3g.48gb, 3g.71gb, 4g.20gb, 4g.24gb, 4g.40gb, 4g.47gb, 4g.48gb, 4g.71gb, 7g.40gb, 7g.80gb, 7g.94gb, 7g.96gb, 7g.141gb"
// +kubebuilder:validation:XValidation:rule="!has(self.mig) || self.mig.all(p, self.mig[p] >= 0 && self.mig[p] <= 4096)",message="spec.quota.mig: each count must be between 0 and 4096"
type Quota struct {
	// GPUs is the number of whole GPUs (nvidia.com/gpu), including the GPUs held for
	// fractional sharing.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=4096
	GPUs *int32 `json:"gpus,omitempty"`

	// MIG maps a MIG profile (e.g. 1g.10gb) to the number of such slices.
	// +optional
	// +kubebuilder:validation:MaxProperties=32
	MIG map[string]int32 `json:"mig,omitempty"`

	// +optional
	// +kubebuilder:validation:XValidation:rule="!isQuantity(string(self)) || !quantity(string(self)).isLessThan(quantity('0'))",messageExpression="'spec.quota.cpu: ' + string(self) + ' is negative; a quota is 0 or more, e.g. 64'"
	CPU *resource.Quantity `json:"cpu,omitempty"`
	// +optional
	// +kubebuilder:validation:XValidation:rule="!isQuantity(string(self)) || !quantity(string(self)).isLessThan(quantity('0'))",messageExpression="'spec.quota.memory: ' + string(self) + ' is negative; a quota is 0 or more, e.g. 256Gi'"
	Memory *resource.Quantity `json:"memory,omitempty"`
	// +optional
	// +kubebuilder:validation:XValidation:rule="!isQuantity(string(self)) || !quantity(string(self)).isLessThan(quantity('0'))",messageExpression="'spec.quota.storage: ' + string(self) + ' is negative; a quota is 0 or more, e.g. 1Ti'"
	Storage *resource.Quantity `json:"storage,omitempty"`

	// StorageClasses limits the team's claims per StorageClass (the key, e.g.
	// standard or fast-ssd): the storage they request and how many there are.
	// spec.quota.storage still caps all classes together.
	// +optional
	// +kubebuilder:validation:MaxProperties=32
	// +kubebuilder:validation:XValidation:rule="self.all(c, c.size() <= 225 && c.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*$'))",message="spec.quota.storageClasses: keys are StorageClass names: lowercase letters, digits, '-' and '.', at most 225 characters (e.g. fast-ssd)"
	StorageClasses map[string]StorageClassQuota `json:"storageClasses,omitempty"`

	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100000
	Pods *int32 `json:"pods,omitempty"`
}

// StorageClassQuota limits the claims of one StorageClass; set at least one
// field.
//
// +kubebuilder:validation:MinProperties=1
type StorageClassQuota struct {
	// Storage is the storage all claims of the class may request together
	// (<class>.storageclass.storage.k8s.io/requests.storage), at most
	// spec.quota.storage. (Checked by gpuvc, not by the CRD: a CEL rule on
	// quantities in a map exceeds the API server's cost budget; a Team that
	// breaks it is refused by the CLI and marked invalid by the manager.)
	// +optional
	Storage *resource.Quantity `json:"storage,omitempty"`
	// Claims is how many claims of the class the team may have
	// (<class>.storageclass.storage.k8s.io/persistentvolumeclaims); 0 forbids
	// the class.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100000
	Claims *int32 `json:"claims,omitempty"`
}

// GPUSharing configures fractional GPUs and how plain GPU requests are served.
//
// +kubebuilder:validation:XValidation:rule="!has(self.fractionLimits) || !has(self.fractionLimits.enabled) || !self.fractionLimits.enabled || (has(self.fractions) && self.fractions)",message="spec.gpuSharing.fractionLimits: limits apply to fractional pods; set spec.gpuSharing.fractions: true"
type GPUSharing struct {
	// Fractions lets pods ask for part of a GPU with the KAI-style gpu-fraction or
	// gpu-memory annotations; shared GPUs are held by reservation pods in the team's
	// own namespace, so they count against spec.quota.gpus and are never shared with
	// another team.
	// +optional
	Fractions bool `json:"fractions,omitempty"`

	// MaxPodsPerSharedGPU bounds how many pods share one GPU.
	// +optional
	// +kubebuilder:default=8
	// +kubebuilder:validation:Minimum=2
	// +kubebuilder:validation:Maximum=48
	MaxPodsPerSharedGPU int32 `json:"maxPodsPerSharedGPU,omitempty"`

	// WholeGPUAs maps a plain nvidia.com/gpu request to a MIG profile (e.g. 3g.40gb)
	// instead of a whole GPU. Empty: whole GPUs.
	// +optional
	// +kubebuilder:validation:Pattern=`^[1-7]g\.[0-9]+gb(\+me)?$`
	WholeGPUAs string `json:"wholeGPUAs,omitempty"`

	// FractionLimits puts memory and compute limits for HAMi-core's libvgpu in
	// fractional pods' environment (team_fraction_types.go). Needs fractions.
	// +optional
	FractionLimits *FractionLimits `json:"fractionLimits,omitempty"`
}

// Network configures the team's host NetworkPolicies.
type Network struct {
	// DefaultDeny blocks traffic to and from other namespaces except DNS and what the
	// vCluster control plane needs. Default true.
	// +optional
	// +kubebuilder:default=true
	DefaultDeny *bool `json:"defaultDeny,omitempty"`

	// AllowedEgressCIDRs are extra destinations the team's pods may reach.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:XValidation:rule="isCIDR(self)",message="spec.network.allowedEgressCIDRs: each entry must be a CIDR such as 10.0.0.0/8"
	// +kubebuilder:validation:items:MaxLength=64
	AllowedEgressCIDRs []string `json:"allowedEgressCIDRs,omitempty"`
}

// VClusterSpec tunes the team's vCluster release.
type VClusterSpec struct {
	// ChartVersion of the vcluster chart. Empty: the version the manager is configured with.
	// +optional
	// +kubebuilder:validation:Pattern=`^v?[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$`
	ChartVersion string `json:"chartVersion,omitempty"`

	// Values are extra vcluster.yaml values merged over the ones gpuvc sets; gpuvc's
	// fences (pool tolerations, node selector) cannot be overridden.
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=object
	Values *apiextensionsv1.JSON `json:"values,omitempty"`
}

// TeamStatus is what the manager observed.
type TeamStatus struct {
	// ObservedGeneration is the spec generation the conditions describe.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions: Ready, HostResourcesReady, VClusterReady, KubeconfigReady
	// (the reconciler's) and Asleep (the idle policy's).
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// Namespace is the team's host namespace.
	// +optional
	Namespace string `json:"namespace,omitempty"`

	// KubeconfigSecret names the Secret in the host namespace holding the team's
	// kubeconfig.
	// +optional
	KubeconfigSecret string `json:"kubeconfigSecret,omitempty"`

	// GPUUsage is what the team's pods request now, from the namespace's quota usage.
	// +optional
	GPUUsage *GPUUsage `json:"gpuUsage,omitempty"`

	// Queue is the team's standing in Kueue, with spec.queueing (team_queue_types.go).
	// +optional
	Queue *QueueStatus `json:"queue,omitempty"`

	// GPUSeconds is the GPU time the team's pods held, integrated by the manager
	// (package manager/accounting); written every few minutes when it changed.
	// +optional
	GPUSeconds *GPUSeconds `json:"gpuSeconds,omitempty"`

	// Idle is what the idle policy observed (team_idle_types.go).
	// +optional
	Idle *IdleStatus `json:"idle,omitempty"`
}

// GPUSeconds is GPU time in GPU-seconds (one whole GPU held for one second),
// rounded down.
type GPUSeconds struct {
	// Since is when the manager started counting for this team.
	Since metav1.Time `json:"since"`
	// SampledAt is the sample the counts run up to (not rewritten while they do
	// not change).
	SampledAt metav1.Time `json:"sampledAt"`
	// Total is the GPU time the team held, over all pools and kinds.
	Total int64 `json:"total"`
	// ByKind splits Total per pool and kind: whole (nvidia.com/gpu), mig (slices
	// weighted by compute slices), fraction (shares of reservation GPUs bound to
	// pods) and reserved (the rest of the reservation GPUs).
	// +optional
	// +listType=map
	// +listMapKey=pool
	// +listMapKey=kind
	ByKind []KindSeconds `json:"byKind,omitempty"`
}

// KindSeconds is the GPU time of one pool and kind.
type KindSeconds struct {
	Pool    string `json:"pool"`
	Kind    string `json:"kind"`
	Seconds int64  `json:"seconds"`
}

// GPUUsage counts requested GPUs.
type GPUUsage struct {
	GPUs int64            `json:"gpus"`
	MIG  map[string]int64 `json:"mig,omitempty"`
}
