package vclusters

import (
	corev1 "k8s.io/api/core/v1"
)

// values mirrors the part of vCluster v0.36.1's vcluster.yaml that gpuvc sets. Field
// names follow the chart's values.schema.json, which rejects unknown keys; a unit
// test checks every value built here against that schema.
type values struct {
	ControlPlane     controlPlaneValues     `json:"controlPlane"`
	ExportKubeConfig exportKubeConfigValues `json:"exportKubeConfig"`
	Sync             syncValues             `json:"sync"`
	Policies         policiesValues         `json:"policies"`
	Experimental     experimentalValues     `json:"experimental"`
	Telemetry        telemetryValues        `json:"telemetry"`
	Integrations     integrationsValues     `json:"integrations"`
}

// controlPlaneValues is controlPlane.
type controlPlaneValues struct {
	StatefulSet statefulSetValues `json:"statefulSet"`
	Proxy       proxyValues       `json:"proxy"`
	Distro      *distroValues     `json:"distro,omitempty"`
}

// distroValues is controlPlane.distro; gpuvc sets only the security context of the
// k8s distro's init container (it copies the Kubernetes binaries).
type distroValues struct {
	K8s distroK8sValues `json:"k8s"`
}

type distroK8sValues struct {
	SecurityContext *corev1.SecurityContext `json:"securityContext,omitempty"`
}

// securityValues is controlPlane.statefulSet.security.
type securityValues struct {
	PodSecurityContext       *corev1.PodSecurityContext `json:"podSecurityContext,omitempty"`
	ContainerSecurityContext *corev1.SecurityContext    `json:"containerSecurityContext,omitempty"`
}

// statefulSetValues is controlPlane.statefulSet.
type statefulSetValues struct {
	Image       imageValues       `json:"image"`
	Resources   *resourcesValues  `json:"resources,omitempty"`
	Scheduling  schedulingValues  `json:"scheduling"`
	Persistence persistenceValues `json:"persistence"`
	Security    *securityValues   `json:"security,omitempty"`
}

// imageValues is controlPlane.statefulSet.image.
type imageValues struct {
	Registry   string `json:"registry,omitempty"`
	Repository string `json:"repository,omitempty"`
	Tag        string `json:"tag,omitempty"`
}

// resourcesValues is controlPlane.statefulSet.resources. A nil quantity is written as null,
// which makes Helm drop the chart's default for that resource.
type resourcesValues struct {
	Limits   map[string]*string `json:"limits"`
	Requests map[string]*string `json:"requests"`
}

// schedulingValues is controlPlane.statefulSet.scheduling.
type schedulingValues struct {
	NodeSelector map[string]string   `json:"nodeSelector,omitempty"`
	Tolerations  []corev1.Toleration `json:"tolerations,omitempty"`
}

// persistenceValues is controlPlane.statefulSet.persistence.
type persistenceValues struct {
	VolumeClaim volumeClaimValues `json:"volumeClaim"`
}

// volumeClaimValues is controlPlane.statefulSet.persistence.volumeClaim.
type volumeClaimValues struct {
	Enabled      bool   `json:"enabled"`
	Size         string `json:"size,omitempty"`
	StorageClass string `json:"storageClass,omitempty"`
}

// proxyValues is controlPlane.proxy.
type proxyValues struct {
	ExtraSANs []string `json:"extraSANs,omitempty"`
}

// exportKubeConfigValues is exportKubeConfig.
type exportKubeConfigValues struct {
	Context string `json:"context,omitempty"`
	Server  string `json:"server"`
}

// syncValues is sync.
type syncValues struct {
	ToHost   toHostValues   `json:"toHost"`
	FromHost fromHostValues `json:"fromHost"`
}

// toHostValues is sync.toHost.
type toHostValues struct {
	Pods podSyncValues `json:"pods"`
	// NetworkPolicies the team writes reach its host namespace, where gpuvc's
	// NetworkPolicy fence (syncer/celpolicy) keeps them from widening the host's
	// default deny.
	NetworkPolicies toggleValues `json:"networkPolicies"`
	// ResourceClaims and ResourceClaimTemplates a spec.dra team writes reach
	// its host namespace, inside gpuvc's DRA fence; omitted: the chart's off.
	ResourceClaims         *toggleValues `json:"resourceClaims,omitempty"`
	ResourceClaimTemplates *toggleValues `json:"resourceClaimTemplates,omitempty"`
}

// podSyncValues is sync.toHost.pods.
type podSyncValues struct {
	// EnforceTolerations are "key=value:Effect" strings added to every synced pod.
	EnforceTolerations []string `json:"enforceTolerations"`
}

// fromHostValues is sync.fromHost.
type fromHostValues struct {
	Nodes nodeSyncValues `json:"nodes"`
	// StorageClasses shows the host's StorageClasses in the virtual cluster
	// ("true"); omitted, the chart's "auto" shows none (it needs a ClusterRole).
	StorageClasses *autoToggleValues `json:"storageClasses,omitempty"`
	// DeviceClasses shows the host's DeviceClasses to a spec.dra team. All of
	// them: vCluster v0.36.1 selects by labels only and a DeviceClass's name
	// is no label; the fence refuses claims of classes the team may not use.
	DeviceClasses *toggleValues `json:"deviceClasses,omitempty"`
}

// autoToggleValues is an object whose enabled flag is "true", "false" or "auto".
type autoToggleValues struct {
	Enabled string `json:"enabled"`
}

// nodeSyncValues is sync.fromHost.nodes. With selector labels, vCluster shows only the
// matching host nodes and adds the labels as node selector to every synced pod.
type nodeSyncValues struct {
	Enabled  bool               `json:"enabled"`
	Selector nodeSelectorValues `json:"selector"`
}

// nodeSelectorValues is sync.fromHost.nodes.selector.
type nodeSelectorValues struct {
	Labels map[string]string `json:"labels"`
}

// policiesValues is policies: gpuvc creates quota, limits and network policy on the host
// itself, so the chart's own copies stay off.
type policiesValues struct {
	ResourceQuota toggleValues `json:"resourceQuota"`
	LimitRange    toggleValues `json:"limitRange"`
	NetworkPolicy toggleValues `json:"networkPolicy"`
}

// toggleValues is an object with only an enabled flag.
type toggleValues struct {
	Enabled bool `json:"enabled"`
}

// experimentalValues is experimental.
type experimentalValues struct {
	SyncSettings syncSettingsValues `json:"syncSettings"`
}

// syncSettingsValues is experimental.syncSettings.
type syncSettingsValues struct {
	SetOwner bool `json:"setOwner"`
}

// integrationsValues is integrations.
type integrationsValues struct {
	MetricsServer metricsServerValues `json:"metricsServer"`
}

// metricsServerValues is integrations.metricsServer: vCluster's proxy of the
// host's Metrics API (kubectl top), pods from the team's host namespace only,
// nodes through a ClusterRole.
type metricsServerValues struct {
	Enabled bool `json:"enabled"`
	Nodes   bool `json:"nodes"`
	Pods    bool `json:"pods"`
}

// telemetryValues is telemetry.
type telemetryValues struct {
	Enabled bool `json:"enabled"`
}
