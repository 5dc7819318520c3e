package vclusters

import (
	"encoding/json"
	"fmt"

	"k8s.io/utils/ptr"

	"github.com/gpuvc/gpuvc/api/contract"

	corev1 "k8s.io/api/core/v1"
)

// Control-plane image: the open-source build, tagged with the chart's version. The
// chart defaults to the pro image; gpuvc uses none of its features.
const (
	imageRegistry   = "ghcr.io"
	imageRepository = "loft-sh/vcluster-oss"
)

// The chart's default requests and limits (values.yaml of v0.36.1). With explicit
// ControlPlaneResources each one not given is written as null so Helm drops it; a
// null for a resource without default would reach the pod as a zero quantity.
var (
	chartDefaultRequests = []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage}
	chartDefaultLimits   = []corev1.ResourceName{corev1.ResourceMemory, corev1.ResourceEphemeralStorage}
)

// HelmValues returns the Helm values gpuvc installs the vCluster chart with for spec:
// the values derived from the spec, with spec.ExtraValues deep-merged over them.
func HelmValues(spec Spec) (map[string]any, error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	base, err := toMap(buildValues(spec))
	if err != nil {
		return nil, err
	}
	extra, err := toMap(spec.ExtraValues)
	if err != nil {
		return nil, fmt.Errorf("ExtraValues: %w", err)
	}
	return MergeValues(base, extra), nil
}

// buildValues maps a valid spec onto the chart's values.
func buildValues(spec Spec) values {
	host, _ := serverHost(spec.KubeconfigServer) // validated
	poolToleration := contract.LabelPool + "=" + spec.Pool + ":" + string(corev1.TaintEffectNoSchedule)
	v := values{
		ControlPlane: controlPlaneValues{
			StatefulSet: statefulSetValues{
				Image: imageValues{
					Registry:   imageRegistry,
					Repository: imageRepository,
					Tag:        spec.Chart.version(),
				},
				Resources:   resources(spec.ControlPlaneResources),
				Scheduling:  controlPlaneScheduling(spec.ControlPlanePool),
				Persistence: persistence(spec.Persistence),
			},
			// The team reaches the API at KubeconfigServer: its host must be in the
			// serving certificate.
			Proxy: proxyValues{ExtraSANs: []string{host}},
		},
		ExportKubeConfig: exportKubeConfigValues{
			Context: spec.contextName(),
			Server:  spec.KubeconfigServer,
		},
		Sync: syncValues{
			// Synced pods tolerate their pool's taint and, through the node selector
			// below, land only on its nodes; the virtual cluster sees only those.
			ToHost: toHostValues{
				Pods: podSyncValues{EnforceTolerations: []string{poolToleration}},
				// A team's NetworkPolicies are honoured on the host, inside the fence.
				NetworkPolicies: toggleValues{Enabled: true},
			},
			FromHost: fromHostValues{Nodes: nodeSyncValues{
				Enabled:  spec.SyncRealNodes,
				Selector: nodeSelectorValues{Labels: map[string]string{contract.LabelPool: spec.Pool}},
			}},
		},
		// Quota, limits and network policy are the manager's, on the host namespace.
		Policies: policiesValues{},
		Experimental: experimentalValues{
			SyncSettings: syncSettingsValues{SetOwner: spec.SetOwner},
		},
		Telemetry:    telemetryValues{Enabled: false},
		Integrations: integrationsValues{MetricsServer: metricsServer(spec)},
	}
	if spec.SyncRealNodes {
		// Cluster-wide reads come with the ClusterRole that syncing real nodes
		// installs anyway: the host's StorageClasses are visible to the team.
		v.Sync.FromHost.StorageClasses = &autoToggleValues{Enabled: "true"}
	}
	if spec.DRA {
		on := &toggleValues{Enabled: true}
		v.Sync.ToHost.ResourceClaims, v.Sync.ToHost.ResourceClaimTemplates = on, on
		v.Sync.FromHost.DeviceClasses = on
	}
	if spec.RunAsNonRoot {
		restrict(&v.ControlPlane)
	}
	return v
}

// metricsServer turns on vCluster's proxy of the host's Metrics API where
// spec.MetricsProxy says the host serves it: `kubectl top pods` through the
// team's kubeconfig shows the team's pods only (vCluster asks the host for its
// own namespace's pods). Node metrics need vCluster's ClusterRole (cluster-wide
// metrics.k8s.io nodes): only with real node sync, which installs that
// ClusterRole anyway; without it the manager holds no cluster RBAC to grant
// (docs/chart.md) and `kubectl top nodes` says the Metrics API has no node
// metrics.
func metricsServer(spec Spec) metricsServerValues {
	if !spec.MetricsProxy {
		return metricsServerValues{}
	}
	return metricsServerValues{Enabled: true, Pods: true, Nodes: spec.SyncRealNodes}
}

// nonRootUID is the user the control plane runs as in restricted namespaces.
const nonRootUID = 12345

// restrict sets the security contexts the "restricted" Pod Security Standard asks of
// every container: non-root, no privilege escalation, no capabilities, the runtime's
// default seccomp profile.
func restrict(cp *controlPlaneValues) {
	uid := int64(nonRootUID)
	container := func() *corev1.SecurityContext {
		return &corev1.SecurityContext{
			AllowPrivilegeEscalation: ptr.To(false),
			RunAsNonRoot:             ptr.To(true),
			RunAsUser:                ptr.To(uid),
			RunAsGroup:               ptr.To(uid),
			Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
			SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		}
	}
	cp.StatefulSet.Security = &securityValues{
		PodSecurityContext: &corev1.PodSecurityContext{
			RunAsNonRoot:   ptr.To(true),
			RunAsUser:      ptr.To(uid),
			RunAsGroup:     ptr.To(uid),
			FSGroup:        ptr.To(uid),
			SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		},
		ContainerSecurityContext: container(),
	}
	cp.Distro = &distroValues{K8s: distroK8sValues{SecurityContext: container()}}
}

// resources gives exactly the requested requests and limits; nil keeps the chart's.
func resources(r *corev1.ResourceRequirements) *resourcesValues {
	if r == nil {
		return nil
	}
	list := func(l corev1.ResourceList, defaults []corev1.ResourceName) map[string]*string {
		m := map[string]*string{}
		for _, name := range defaults {
			m[string(name)] = nil
		}
		for name, q := range l {
			s := q.String()
			m[string(name)] = &s
		}
		return m
	}
	return &resourcesValues{Limits: list(r.Limits, chartDefaultLimits), Requests: list(r.Requests, chartDefaultRequests)}
}

func controlPlaneScheduling(pool string) schedulingValues {
	if pool == "" {
		return schedulingValues{}
	}
	return schedulingValues{
		NodeSelector: map[string]string{contract.LabelPool: pool},
		Tolerations: []corev1.Toleration{{
			Key:      contract.LabelPool,
			Operator: corev1.TolerationOpEqual,
			Value:    pool,
			Effect:   corev1.TaintEffectNoSchedule,
		}},
	}
}

func persistence(p Persistence) persistenceValues {
	if p.Ephemeral {
		return persistenceValues{VolumeClaim: volumeClaimValues{Enabled: false}}
	}
	return persistenceValues{VolumeClaim: volumeClaimValues{
		Enabled:      true,
		Size:         p.Size,
		StorageClass: p.StorageClass,
	}}
}

// toMap turns typed values into the generic form Helm takes, through JSON so that
// numbers and nesting look exactly like values Helm reads back from a release.
func toMap(v any) (map[string]any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	m := map[string]any{}
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	return m, nil
}
