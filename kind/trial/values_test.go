package trial

import (
	"context"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"helm.sh/helm/v3/pkg/releaseutil"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/gpuvc/gpuvc/charts/installer"
)

const testNodeIP = "172.18.0.3"

func trialValues(t *testing.T) map[string]any {
	t.Helper()
	img, err := ParseImage("ghcr.io/gpuvc/gpuvc:v0.1.0-3-gabc1234-dirty")
	if err != nil {
		t.Fatal(err)
	}
	vals, err := Values(img, testNodeIP, Pools())
	if err != nil {
		t.Fatal(err)
	}
	return vals
}

// lookup reads a dotted path of nested maps.
func lookup(t *testing.T, vals map[string]any, path string) any {
	t.Helper()
	var cur any = vals
	for _, k := range strings.Split(path, ".") {
		m, ok := cur.(map[string]any)
		if !ok {
			t.Fatalf("%s: %v is not a map at %q", path, cur, k)
		}
		cur = m[k]
	}
	return cur
}

func TestValuesPassTheChartSchema(t *testing.T) {
	if err := installer.Check(trialValues(t)); err != nil {
		t.Fatalf("the chart refuses the trial's values: %v", err)
	}
}

func TestValues(t *testing.T) {
	vals := trialValues(t)
	for path, want := range map[string]any{
		"image.repository":      "ghcr.io/gpuvc/gpuvc",
		"image.tag":             "v0.1.0-3-gabc1234-dirty",
		"image.pullPolicy":      "Never",
		"certManager.enabled":   false,
		"manager.replicas":      1,
		"manager.teamServerURL": "https://172.18.0.3:{{.NodePort}}",
		"vcluster.ephemeral":    true,
		"vcluster.values.controlPlane.service.spec.type": "NodePort",
		"agent.devicePlugin.enabled":                     true,
		"agent.simulate.h100":                            "product=NVIDIA-H100-80GB-HBM3,count=8",
	} {
		if got := lookup(t, vals, path); !cmp.Equal(want, got) {
			t.Errorf("%s = %#v, want %#v", path, got, want)
		}
	}
	if got := lookup(t, vals, "manager.nodeSelector").(map[string]any)["gpuvc.dev/pool"]; got != "system" {
		t.Errorf("manager.nodeSelector[gpuvc.dev/pool] = %v, want system", got)
	}
	if sim := lookup(t, vals, "agent.simulate").(map[string]any); len(sim) != 3 {
		t.Errorf("agent.simulate = %v, want the three pools (system has GPUs too)", sim)
	}

	img, _ := ParseImage("example.test:5000/gpuvc:dev")
	v6, err := Values(img, "fd00:18::3", Pools())
	if err != nil {
		t.Fatal(err)
	}
	if got := lookup(t, v6, "manager.teamServerURL"); got != "https://[fd00:18::3]:{{.NodePort}}" {
		t.Errorf("IPv6 teamServerURL = %v", got)
	}
	if _, err := Values(img, "system-0", Pools()); err == nil {
		t.Error("a node name instead of an address was accepted")
	}
}

// The chart rendered with the trial's values, as `gpuvc install --dry-run` renders
// it: one simulated agent per pool serving its GPUs to the kubelet, the manager
// told the NodePort URL, vCluster's Service made a NodePort, no image pulled.
func TestChartRenderedWithTheTrialValues(t *testing.T) {
	res, err := installer.Render(context.Background(), Namespace, trialValues(t))
	if err != nil {
		t.Fatal(err)
	}
	specs, err := SimulateSpecs(Pools())
	if err != nil {
		t.Fatal(err)
	}
	daemonSets := map[string]*appsv1.DaemonSet{}
	var manager *appsv1.Deployment
	var vclusterValues *corev1.ConfigMap
	for _, doc := range releaseutil.SplitManifests(res.Manifest) {
		var meta metav1.TypeMeta
		if err := yaml.Unmarshal([]byte(doc), &meta); err != nil {
			t.Fatal(err)
		}
		switch meta.Kind {
		case "DaemonSet":
			ds := &appsv1.DaemonSet{}
			if err := yaml.Unmarshal([]byte(doc), ds); err != nil {
				t.Fatal(err)
			}
			daemonSets[ds.Name] = ds
		case "Deployment":
			manager = &appsv1.Deployment{}
			if err := yaml.Unmarshal([]byte(doc), manager); err != nil {
				t.Fatal(err)
			}
		case "ConfigMap":
			cm := &corev1.ConfigMap{}
			if err := yaml.Unmarshal([]byte(doc), cm); err != nil {
				t.Fatal(err)
			}
			if cm.Name == "gpuvc-vcluster-values" {
				vclusterValues = cm
			}
		}
	}

	if len(daemonSets) != len(specs) {
		t.Errorf("agent DaemonSets %v, want one per pool of %v", slices.Sorted(maps.Keys(daemonSets)), specs)
	}
	for pool, spec := range specs {
		ds := daemonSets["gpuvc-agent-"+pool]
		if ds == nil {
			t.Errorf("no DaemonSet gpuvc-agent-%s", pool)
			continue
		}
		pod := ds.Spec.Template.Spec
		if pod.NodeSelector["gpuvc.dev/pool"] != pool {
			t.Errorf("%s: nodeSelector %v", ds.Name, pod.NodeSelector)
		}
		c := pod.Containers[0]
		for _, arg := range []string{"--simulate=" + spec, "--device-plugin", "--device-plugin-dir=/var/lib/kubelet/device-plugins"} {
			if !slices.Contains(c.Args, arg) {
				t.Errorf("%s: args %v lack %s", ds.Name, c.Args, arg)
			}
		}
		if c.Image != "ghcr.io/gpuvc/gpuvc:v0.1.0-3-gabc1234-dirty" || c.ImagePullPolicy != corev1.PullNever {
			t.Errorf("%s: image %s pull %s", ds.Name, c.Image, c.ImagePullPolicy)
		}
		tolerated := slices.ContainsFunc(pod.Tolerations, func(tol corev1.Toleration) bool {
			return tol.Key == "gpuvc.dev/pool" && tol.Operator == corev1.TolerationOpExists
		})
		terms := pod.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
		if !tolerated || len(terms) != 1 || len(terms[0].MatchExpressions) != 1 || terms[0].MatchExpressions[0].Operator != corev1.NodeSelectorOpExists {
			t.Errorf("%s: tolerations %v, affinity %v: want it on every pool's nodes, tainted or not", ds.Name, pod.Tolerations, terms)
		}
	}

	if manager == nil {
		t.Fatal("no manager Deployment")
	}
	args := manager.Spec.Template.Spec.Containers[0].Args
	if !slices.Contains(args, "--team-server-url=https://"+testNodeIP+":{{.NodePort}}") {
		t.Errorf("manager args %v lack the NodePort team server URL", args)
	}
	if *manager.Spec.Replicas != 1 || manager.Spec.Template.Spec.NodeSelector["gpuvc.dev/pool"] != "system" {
		t.Errorf("manager: %d replicas, nodeSelector %v", *manager.Spec.Replicas, manager.Spec.Template.Spec.NodeSelector)
	}

	if vclusterValues == nil {
		t.Fatal("no ConfigMap gpuvc-vcluster-values")
	}
	var platform struct {
		ControlPlane struct {
			Service struct {
				Spec struct{ Type string } `json:"spec"`
			} `json:"service"`
		} `json:"controlPlane"`
	}
	if err := yaml.Unmarshal([]byte(vclusterValues.Data["vcluster-values.yaml"]), &platform); err != nil {
		t.Fatal(err)
	}
	if platform.ControlPlane.Service.Spec.Type != "NodePort" {
		t.Errorf("vCluster values %q: want controlPlane.service.spec.type NodePort", vclusterValues.Data["vcluster-values.yaml"])
	}
}

func TestOverlayLetsCallersOverride(t *testing.T) {
	base := trialValues(t)
	merged := installer.Overlay(base, map[string]any{"vcluster": map[string]any{"chart": map[string]any{"dir": "/charts/vcluster"}}})
	if got := lookup(t, merged, "vcluster.chart.dir"); got != "/charts/vcluster" {
		t.Errorf("vcluster.chart.dir = %v", got)
	}
	if got := lookup(t, merged, "vcluster.ephemeral"); got != true {
		t.Errorf("vcluster.ephemeral = %v: the trial's own values must stay", got)
	}
	if err := installer.Check(merged); err != nil {
		t.Error(err)
	}
}

func TestParseImage(t *testing.T) {
	for ref, want := range map[string]string{
		"ghcr.io/gpuvc/gpuvc:dev":           "ghcr.io/gpuvc/gpuvc|dev",
		"localhost:5000/gpuvc:1.2.3":        "localhost:5000/gpuvc|1.2.3",
		"gpuvc:9b7b211-dirty":               "gpuvc|9b7b211-dirty",
		"ghcr.io/gpuvc/gpuvc":               "error: has no tag",
		"localhost:5000/gpuvc":              "error: has no tag",
		"ghcr.io/gpuvc/gpuvc:latest":        "error: other than latest",
		"ghcr.io/gpuvc/gpuvc@sha256:abcdef": "error: not a digest",
	} {
		img, err := ParseImage(ref)
		got := img.Repository + "|" + img.Tag
		if err != nil {
			got = "error: " + err.Error()
		}
		if !strings.HasPrefix(want, "error: ") && got != want || strings.HasPrefix(want, "error: ") && !strings.Contains(got, strings.TrimPrefix(want, "error: ")) {
			t.Errorf("ParseImage(%q) = %q, want %q", ref, got, want)
		}
	}
}
