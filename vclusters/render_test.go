package vclusters_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"helm.sh/helm/v3/pkg/releaseutil"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/yaml"

	"github.com/gpuvc/gpuvc/vclusters"
	"github.com/gpuvc/gpuvc/vclusters/vclusterstest"
)

// moduleChart is the real vCluster chart from the Go module cache.
func moduleChart(t *testing.T) vclusters.ChartSource {
	t.Helper()
	src, err := vclusterstest.ChartSource(context.Background())
	if err != nil {
		t.Fatalf("getting the vCluster chart from the module cache: %v", err)
	}
	return src
}

func teamSpec(t *testing.T, mutate ...func(*vclusters.Spec)) vclusters.Spec {
	s := vclusters.Spec{
		Name:             "fraud",
		Namespace:        "team-fraud",
		Pool:             "a100",
		KubeconfigServer: "https://fraud.vc.example.com",
		Chart:            moduleChart(t),
	}
	for _, m := range mutate {
		m(&s)
	}
	return s
}

// renderObjects renders spec with the real chart and decodes every object.
func renderObjects(t *testing.T, spec vclusters.Spec) map[string]runtime.Object {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	manifest, err := vclusters.Render(ctx, spec)
	if err != nil {
		t.Fatalf("Render: %v", err)
	}
	objs := map[string]runtime.Object{}
	for _, doc := range releaseutil.SplitManifests(manifest) {
		if strings.TrimSpace(doc) == "" {
			continue
		}
		obj, gvk, err := scheme.Codecs.UniversalDeserializer().Decode([]byte(doc), nil, nil)
		if err != nil {
			t.Fatalf("decoding rendered object: %v\n%s", err, doc)
		}
		acc := obj.(interface{ GetName() string })
		objs[gvk.Kind+"/"+acc.GetName()] = obj
	}
	return objs
}

func TestRenderRealChartObjects(t *testing.T) {
	objs := renderObjects(t, teamSpec(t))
	var kinds []string
	for k := range objs {
		kinds = append(kinds, k)
	}
	// Namespaced objects only: no cluster-wide access for the team's control plane
	// (real node sync, which needs a ClusterRole, is off), and no quota, limit range
	// or network policy of the chart's own (the manager makes those).
	for _, want := range []string{"StatefulSet/fraud", "Service/fraud", "Service/fraud-headless",
		"Secret/vc-config-fraud", "ServiceAccount/vc-fraud", "Role/vc-fraud", "RoleBinding/vc-fraud"} {
		if _, ok := objs[want]; !ok {
			t.Errorf("rendered objects lack %s; have %v", want, kinds)
		}
	}
	for k := range objs {
		for _, banned := range []string{"ResourceQuota/", "LimitRange/", "NetworkPolicy/", "ClusterRole/", "ClusterRoleBinding/"} {
			if strings.HasPrefix(k, banned) {
				t.Errorf("chart rendered %s: gpuvc turns the chart's policies off", k)
			}
		}
	}
}

func TestRenderRealChartControlPlanePod(t *testing.T) {
	spec := teamSpec(t, func(s *vclusters.Spec) {
		s.ControlPlanePool = "system"
		s.Persistence.Ephemeral = true
		s.ControlPlaneResources = &corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m")},
		}
	})
	// Without a volume claim the chart runs the control plane as a Deployment.
	objs := renderObjects(t, spec)
	if _, ok := objs["StatefulSet/fraud"]; ok {
		t.Error("ephemeral datastore rendered a StatefulSet")
	}
	dep, ok := objs["Deployment/fraud"].(*appsv1.Deployment)
	if !ok {
		t.Fatalf("ephemeral datastore: no Deployment/fraud rendered")
	}
	pod := dep.Spec.Template.Spec
	var syncer *corev1.Container
	for i := range pod.Containers {
		if pod.Containers[i].Name == "syncer" {
			syncer = &pod.Containers[i]
		}
	}
	if syncer == nil {
		t.Fatalf("no syncer container in %v", pod.Containers)
	}
	if got, want := syncer.Image, "ghcr.io/loft-sh/vcluster-oss:0.36.1"; got != want {
		t.Errorf("image = %q, want %q", got, want)
	}
	if diff := cmp.Diff(map[string]string{"gpuvc.dev/pool": "system"}, pod.NodeSelector); diff != "" {
		t.Errorf("nodeSelector (-want +got):\n%s", diff)
	}
	wantTol := []corev1.Toleration{{Key: "gpuvc.dev/pool", Operator: corev1.TolerationOpEqual, Value: "system", Effect: corev1.TaintEffectNoSchedule}}
	if diff := cmp.Diff(wantTol, pod.Tolerations); diff != "" {
		t.Errorf("tolerations (-want +got):\n%s", diff)
	}
	// Exactly the requested resources: the chart's memory and ephemeral-storage
	// defaults are gone.
	wantRes := corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m")}}
	if diff := cmp.Diff(wantRes.Requests.Cpu().String(), syncer.Resources.Requests.Cpu().String()); diff != "" {
		t.Errorf("cpu request (-want +got):\n%s", diff)
	}
	if len(syncer.Resources.Requests) != 1 || len(syncer.Resources.Limits) != 0 {
		t.Errorf("resources = %v, want only requests.cpu", syncer.Resources)
	}
}

func TestRenderRealChartPersistentByDefault(t *testing.T) {
	sts := renderObjects(t, teamSpec(t, func(s *vclusters.Spec) { s.Persistence.Size = "7Gi" }))["StatefulSet/fraud"].(*appsv1.StatefulSet)
	if len(sts.Spec.VolumeClaimTemplates) != 1 {
		t.Fatalf("want one volume claim template, got %d", len(sts.Spec.VolumeClaimTemplates))
	}
	if got := sts.Spec.VolumeClaimTemplates[0].Spec.Resources.Requests.Storage().String(); got != "7Gi" {
		t.Errorf("claim size = %s, want 7Gi", got)
	}
}

// The values reach vCluster through the config Secret: what it will enforce.
func TestRenderRealChartVClusterConfig(t *testing.T) {
	secret := renderObjects(t, teamSpec(t))["Secret/vc-config-fraud"].(*corev1.Secret)
	var cfg struct {
		ExportKubeConfig struct{ Server, Context string } `json:"exportKubeConfig"`
		Sync             struct {
			ToHost struct {
				Pods struct {
					EnforceTolerations []string `json:"enforceTolerations"`
				} `json:"pods"`
			} `json:"toHost"`
			FromHost struct {
				Nodes struct {
					Enabled  bool `json:"enabled"`
					Selector struct {
						Labels map[string]string `json:"labels"`
					} `json:"selector"`
				} `json:"nodes"`
			} `json:"fromHost"`
		} `json:"sync"`
		ControlPlane struct {
			Proxy struct {
				ExtraSANs []string `json:"extraSANs"`
			} `json:"proxy"`
		} `json:"controlPlane"`
		Experimental struct {
			SyncSettings struct {
				SetOwner bool `json:"setOwner"`
			} `json:"syncSettings"`
		} `json:"experimental"`
		Telemetry struct {
			Enabled bool `json:"enabled"`
		} `json:"telemetry"`
	}
	if err := yaml.Unmarshal(secret.Data["config.yaml"], &cfg); err != nil {
		t.Fatal(err)
	}
	checks := map[string]struct{ want, got any }{
		"server":             {"https://fraud.vc.example.com", cfg.ExportKubeConfig.Server},
		"context":            {"fraud", cfg.ExportKubeConfig.Context},
		"enforceTolerations": {[]string{"gpuvc.dev/pool=a100:NoSchedule"}, cfg.Sync.ToHost.Pods.EnforceTolerations},
		"nodes enabled":      {false, cfg.Sync.FromHost.Nodes.Enabled},
		"node selector":      {map[string]string{"gpuvc.dev/pool": "a100"}, cfg.Sync.FromHost.Nodes.Selector.Labels},
		"extraSANs":          {[]string{"fraud.vc.example.com"}, cfg.ControlPlane.Proxy.ExtraSANs},
		"setOwner":           {false, cfg.Experimental.SyncSettings.SetOwner},
		"telemetry":          {false, cfg.Telemetry.Enabled},
	}
	for name, c := range checks {
		if diff := cmp.Diff(c.want, c.got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", name, diff)
		}
	}
}

// The chart's schema rejects unknown keys: a misspelt key in ExtraValues fails
// with Helm's message instead of being ignored.
func TestRenderRejectsUnknownKeys(t *testing.T) {
	spec := teamSpec(t, func(s *vclusters.Spec) {
		s.ExtraValues = map[string]any{"controlPlane": map[string]any{"statefulSet": map[string]any{"imag": "x"}}}
	})
	_, err := vclusters.Render(context.Background(), spec)
	if err == nil || !strings.Contains(err.Error(), "imag") {
		t.Fatalf("want a schema error naming the unknown key, got %v", err)
	}
}

// A spec.dra team's release, rendered with the real chart: vCluster syncs its
// claims and claim templates to the host and shows it the host's DeviceClasses;
// its Role lets the syncer write claims (and their status: gpuvc's fences keep
// the allocation and reservations the scheduler's) and claim templates in the
// team's namespace only, its ClusterRole reads DeviceClasses. Without spec.dra,
// none of it.
func TestRenderRealChartDRA(t *testing.T) {
	type toggle struct {
		Enabled bool `json:"enabled"`
	}
	var cfg struct {
		Sync struct {
			ToHost struct {
				ResourceClaims         toggle `json:"resourceClaims"`
				ResourceClaimTemplates toggle `json:"resourceClaimTemplates"`
			} `json:"toHost"`
			FromHost struct {
				DeviceClasses toggle `json:"deviceClasses"`
			} `json:"fromHost"`
		} `json:"sync"`
	}
	for _, dra := range []bool{true, false} {
		objs := renderObjects(t, teamSpec(t, func(s *vclusters.Spec) { s.DRA = dra }))
		if err := yaml.Unmarshal(objs["Secret/vc-config-fraud"].(*corev1.Secret).Data["config.yaml"], &cfg); err != nil {
			t.Fatal(err)
		}
		got := []bool{cfg.Sync.ToHost.ResourceClaims.Enabled, cfg.Sync.ToHost.ResourceClaimTemplates.Enabled, cfg.Sync.FromHost.DeviceClasses.Enabled}
		if diff := cmp.Diff([]bool{dra, dra, dra}, got); diff != "" {
			t.Errorf("dra=%v: sync of resourceClaims, resourceClaimTemplates, deviceClasses (-want +got):\n%s", dra, diff)
		}
		role, _ := objs["Role/vc-fraud"].(*rbacv1.Role)
		if role == nil {
			t.Fatalf("no Role vc-fraud among %d objects", len(objs))
		}
		var claims, templates bool
		for _, r := range role.Rules {
			for _, res := range r.Resources {
				claims = claims || (res == "resourceclaims" && slices.Contains(r.APIGroups, "resource.k8s.io"))
				templates = templates || res == "resourceclaimtemplates"
			}
		}
		if claims != dra || templates != dra {
			t.Errorf("dra=%v: Role vc-fraud grants resourceclaims %v, resourceclaimtemplates %v", dra, claims, templates)
		}
		var classes bool
		for _, o := range objs {
			if cr, ok := o.(*rbacv1.ClusterRole); ok {
				for _, r := range cr.Rules {
					classes = classes || slices.Contains(r.Resources, "deviceclasses")
				}
			}
		}
		if classes != dra {
			t.Errorf("dra=%v: a ClusterRole reads DeviceClasses: %v", dra, classes)
		}
	}
}
