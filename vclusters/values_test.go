package vclusters

import (
	"k8s.io/utils/ptr"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
)

// wantValues is what gpuvc sets for makeSpec(); cases change it.
func wantValues(mutate ...func(*values)) values {
	v := values{
		ControlPlane: controlPlaneValues{
			StatefulSet: statefulSetValues{
				Image:       imageValues{Registry: "ghcr.io", Repository: "loft-sh/vcluster-oss", Tag: "0.36.1"},
				Persistence: persistenceValues{VolumeClaim: volumeClaimValues{Enabled: true}},
			},
			Proxy: proxyValues{ExtraSANs: []string{"fraud.vc.example.com"}},
		},
		ExportKubeConfig: exportKubeConfigValues{Context: "fraud", Server: "https://fraud.vc.example.com:443"},
		Sync: syncValues{
			ToHost: toHostValues{
				Pods:            podSyncValues{EnforceTolerations: []string{"gpuvc.dev/pool=a100:NoSchedule"}},
				NetworkPolicies: toggleValues{Enabled: true},
			},
			FromHost: fromHostValues{Nodes: nodeSyncValues{
				Enabled:  true,
				Selector: nodeSelectorValues{Labels: map[string]string{"gpuvc.dev/pool": "a100"}},
			},
				StorageClasses: &autoToggleValues{Enabled: "true"},
			},
		},
		Integrations: integrationsValues{MetricsServer: metricsServerValues{Enabled: true, Pods: true, Nodes: true}},
	}
	for _, m := range mutate {
		m(&v)
	}
	return v
}

func TestBuildValues(t *testing.T) {
	cases := map[string]struct {
		spec Spec
		want values
	}{
		"defaults": {
			spec: makeSpec(),
			want: wantValues(),
		},
		"pool h100 enforces its toleration and node selector": {
			spec: makeSpec(func(s *Spec) { s.Pool = "h100" }),
			want: wantValues(func(v *values) {
				v.Sync.ToHost.Pods.EnforceTolerations = []string{"gpuvc.dev/pool=h100:NoSchedule"}
				v.Sync.FromHost.Nodes.Selector.Labels = map[string]string{"gpuvc.dev/pool": "h100"}
			}),
		},
		"dra syncs claims and templates and shows DeviceClasses": {
			spec: makeSpec(func(s *Spec) { s.DRA = true }),
			want: wantValues(func(v *values) {
				v.Sync.ToHost.ResourceClaims = &toggleValues{Enabled: true}
				v.Sync.ToHost.ResourceClaimTemplates = &toggleValues{Enabled: true}
				v.Sync.FromHost.DeviceClasses = &toggleValues{Enabled: true}
			}),
		},
		"control plane pinned to a pool": {
			spec: makeSpec(func(s *Spec) { s.ControlPlanePool = "system" }),
			want: wantValues(func(v *values) {
				v.ControlPlane.StatefulSet.Scheduling = schedulingValues{
					NodeSelector: map[string]string{"gpuvc.dev/pool": "system"},
					Tolerations: []corev1.Toleration{{
						Key: "gpuvc.dev/pool", Operator: corev1.TolerationOpEqual, Value: "system", Effect: corev1.TaintEffectNoSchedule,
					}},
				}
			}),
		},
		"explicit resources null the chart defaults not given": {
			spec: makeSpec(func(s *Spec) {
				s.ControlPlaneResources = &corev1.ResourceRequirements{
					Requests: resourceList("cpu", "500m", "memory", "1Gi"),
					Limits:   resourceList("memory", "2Gi"),
				}
			}),
			want: wantValues(func(v *values) {
				v.ControlPlane.StatefulSet.Resources = &resourcesValues{
					Requests: map[string]*string{"cpu": ptr.To("500m"), "memory": ptr.To("1Gi"), "ephemeral-storage": nil},
					Limits:   map[string]*string{"memory": ptr.To("2Gi"), "ephemeral-storage": nil},
				}
			}),
		},
		"ephemeral datastore": {
			spec: makeSpec(func(s *Spec) { s.Persistence = Persistence{Ephemeral: true, Size: "ignored"} }),
			want: wantValues(func(v *values) {
				v.ControlPlane.StatefulSet.Persistence.VolumeClaim = volumeClaimValues{Enabled: false}
			}),
		},
		"persistent datastore with size and class": {
			spec: makeSpec(func(s *Spec) { s.Persistence = Persistence{Size: "20Gi", StorageClass: "fast"} }),
			want: wantValues(func(v *values) {
				v.ControlPlane.StatefulSet.Persistence.VolumeClaim = volumeClaimValues{Enabled: true, Size: "20Gi", StorageClass: "fast"}
			}),
		},
		"set owner for clusters without KAI": {
			spec: makeSpec(func(s *Spec) { s.SetOwner = true }),
			want: wantValues(func(v *values) { v.Experimental.SyncSettings.SetOwner = true }),
		},
		"context named after the team, server is an IP": {
			spec: makeSpec(func(s *Spec) { s.ContextName = "team-fraud"; s.KubeconfigServer = "https://10.96.0.42" }),
			want: wantValues(func(v *values) {
				v.ExportKubeConfig = exportKubeConfigValues{Context: "team-fraud", Server: "https://10.96.0.42"}
				v.ControlPlane.Proxy.ExtraSANs = []string{"10.96.0.42"}
			}),
		},
		"without real nodes: pod metrics only, no host StorageClasses (no ClusterRole)": {
			spec: makeSpec(func(s *Spec) { s.SyncRealNodes = false }),
			want: wantValues(func(v *values) {
				v.Sync.FromHost.Nodes.Enabled = false
				v.Sync.FromHost.StorageClasses = nil
				v.Integrations.MetricsServer.Nodes = false
			}),
		},
		"host without a Metrics API: no proxy (its API would block namespace deletion in the team's cluster)": {
			spec: makeSpec(func(s *Spec) { s.MetricsProxy = false }),
			want: wantValues(func(v *values) { v.Integrations.MetricsServer = metricsServerValues{} }),
		},
		"image tag follows the chart version": {
			spec: makeSpec(func(s *Spec) { s.Chart.Version = "0.36.0" }),
			want: wantValues(func(v *values) { v.ControlPlane.StatefulSet.Image.Tag = "0.36.0" }),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if err := tc.spec.Validate(); err != nil {
				t.Fatalf("spec invalid: %v", err)
			}
			if diff := cmp.Diff(tc.want, buildValues(tc.spec)); diff != "" {
				t.Errorf("buildValues (-want +got):\n%s", diff)
			}
		})
	}
}

func TestHelmValuesMap(t *testing.T) {
	got, err := HelmValues(makeSpec(func(s *Spec) { s.Persistence.Ephemeral = true }))
	if err != nil {
		t.Fatal(err)
	}
	// The generic form Helm receives, key for key: also pins the JSON names.
	want := map[string]any{
		"controlPlane": map[string]any{
			"statefulSet": map[string]any{
				"image":       map[string]any{"registry": "ghcr.io", "repository": "loft-sh/vcluster-oss", "tag": "0.36.1"},
				"scheduling":  map[string]any{},
				"persistence": map[string]any{"volumeClaim": map[string]any{"enabled": false}},
			},
			"proxy": map[string]any{"extraSANs": []any{"fraud.vc.example.com"}},
		},
		"exportKubeConfig": map[string]any{"context": "fraud", "server": "https://fraud.vc.example.com:443"},
		"sync": map[string]any{
			"toHost": map[string]any{
				"pods":            map[string]any{"enforceTolerations": []any{"gpuvc.dev/pool=a100:NoSchedule"}},
				"networkPolicies": map[string]any{"enabled": true},
			},
			"fromHost": map[string]any{
				"nodes": map[string]any{
					"enabled":  true,
					"selector": map[string]any{"labels": map[string]any{"gpuvc.dev/pool": "a100"}},
				},
				"storageClasses": map[string]any{"enabled": "true"},
			},
		},
		"integrations": map[string]any{"metricsServer": map[string]any{"enabled": true, "nodes": true, "pods": true}},
		"policies": map[string]any{
			"resourceQuota": map[string]any{"enabled": false},
			"limitRange":    map[string]any{"enabled": false},
			"networkPolicy": map[string]any{"enabled": false},
		},
		"experimental": map[string]any{"syncSettings": map[string]any{"setOwner": false}},
		"telemetry":    map[string]any{"enabled": false},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("HelmValues (-want +got):\n%s", diff)
	}
}

func TestHelmValuesExtraWins(t *testing.T) {
	spec := makeSpec(func(s *Spec) {
		s.ExtraValues = map[string]any{
			"telemetry": map[string]any{"enabled": true},
			"controlPlane": map[string]any{
				"statefulSet": map[string]any{
					"image":           map[string]any{"repository": "loft-sh/vcluster-pro"},
					"imagePullPolicy": "Never",
				},
			},
			"sync": map[string]any{"toHost": map[string]any{"pods": map[string]any{
				"enforceTolerations": []any{"other=x:NoExecute"},
			}}},
			"controlPlaneReplicas": 3, // numbers come back as JSON numbers
		}
	})
	got, err := HelmValues(spec)
	if err != nil {
		t.Fatal(err)
	}
	sts := got["controlPlane"].(map[string]any)["statefulSet"].(map[string]any)
	checks := map[string]struct{ want, got any }{
		"extra scalar replaces":          {true, got["telemetry"].(map[string]any)["enabled"]},
		"extra key merges into a map":    {"loft-sh/vcluster-pro", sts["image"].(map[string]any)["repository"]},
		"sibling keys of a merged map":   {"0.36.1", sts["image"].(map[string]any)["tag"]},
		"new key under a gpuvc map":      {"Never", sts["imagePullPolicy"]},
		"lists are replaced, not joined": {[]any{"other=x:NoExecute"}, got["sync"].(map[string]any)["toHost"].(map[string]any)["pods"].(map[string]any)["enforceTolerations"]},
		"numbers normalised":             {float64(3), got["controlPlaneReplicas"]},
	}
	for name, c := range checks {
		if diff := cmp.Diff(c.want, c.got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", name, diff)
		}
	}
	if spec.ExtraValues["telemetry"].(map[string]any)["enabled"] != true {
		t.Error("HelmValues modified the spec's ExtraValues")
	}
}

func TestHelmValuesRejectsInvalidSpec(t *testing.T) {
	_, err := HelmValues(makeSpec(func(s *Spec) { s.Pool = "" }))
	if err == nil || !strings.Contains(err.Error(), "Pool") {
		t.Fatalf("want an error naming Pool, got %v", err)
	}
}

// TestRunAsNonRootSatisfiesRestricted checks the values a "restricted" team gets:
// every container of the control plane non-root, no escalation, no capabilities,
// RuntimeDefault seccomp. The API server's PodSecurity admission is the judge in
// the manager's integration test; this pins the values.
func TestRunAsNonRootSatisfiesRestricted(t *testing.T) {
	v, err := HelmValues(makeSpec(func(s *Spec) { s.RunAsNonRoot = true }))
	if err != nil {
		t.Fatal(err)
	}
	cp := v["controlPlane"].(map[string]any)
	sec := cp["statefulSet"].(map[string]any)["security"].(map[string]any)
	pod := sec["podSecurityContext"].(map[string]any)
	if pod["runAsNonRoot"] != true || pod["seccompProfile"].(map[string]any)["type"] != "RuntimeDefault" {
		t.Errorf("podSecurityContext = %v", pod)
	}
	for name, c := range map[string]any{
		"syncer":     sec["containerSecurityContext"],
		"init (k8s)": cp["distro"].(map[string]any)["k8s"].(map[string]any)["securityContext"],
	} {
		sc := c.(map[string]any)
		if sc["allowPrivilegeEscalation"] != false || sc["runAsNonRoot"] != true ||
			sc["capabilities"].(map[string]any)["drop"].([]any)[0] != "ALL" {
			t.Errorf("%s securityContext = %v", name, sc)
		}
	}
	plain, err := HelmValues(makeSpec())
	if err != nil {
		t.Fatal(err)
	}
	if _, set := plain["controlPlane"].(map[string]any)["distro"]; set {
		t.Error("security contexts set without RunAsNonRoot")
	}
}
