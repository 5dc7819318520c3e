package team

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	gpuvcv1 "github.com/gpuvc/gpuvc/api/v1alpha1"
	"github.com/gpuvc/gpuvc/vclusters"
)

func TestExtraValuesCannotUndoFences(t *testing.T) {
	raw := `{
	  "sync": {"toHost": {"pods": {"enforceTolerations": [], "enabled": true}}, "fromHost": {"nodes": {"enabled": false}}},
	  "exportKubeConfig": {"server": "https://evil"},
	  "controlPlane": {"proxy": {"extraSANs": ["evil"]}, "statefulSet": {"resources": {"limits": {"cpu": "2"}}}},
	  "experimental": {"syncSettings": {"setOwner": true}}
	}`
	team := &gpuvcv1.Team{Spec: gpuvcv1.TeamSpec{Pool: "a100", VCluster: &gpuvcv1.VClusterSpec{
		ChartVersion: "0.36.0", Values: &apiextensionsv1.JSON{Raw: []byte(raw)},
	}}}
	team.Name = "fraud"
	r := NewReconciler(nil, nil, nil, Options{Chart: vclusters.ChartSource{Dir: "/charts/vcluster"}})
	spec := r.vclusterSpec(team)

	want := map[string]any{
		"sync":         map[string]any{"toHost": map[string]any{"pods": map[string]any{"enabled": true}}, "fromHost": map[string]any{}},
		"controlPlane": map[string]any{"proxy": map[string]any{}, "statefulSet": map[string]any{"resources": map[string]any{"limits": map[string]any{"cpu": "2"}}}},
		"experimental": map[string]any{"syncSettings": map[string]any{}},
	}
	if diff := cmp.Diff(want, spec.ExtraValues); diff != "" {
		t.Errorf("extra values (-want +got):\n%s", diff)
	}
	if spec.Chart.Version != "0.36.0" || spec.Chart.Dir != "/charts/vcluster" {
		t.Errorf("chart = %+v, want the manager's source at the team's version", spec.Chart)
	}
	if spec.Pool != "a100" || spec.Namespace != "team-fraud" || spec.KubeconfigServer != "https://fraud.team-fraud.svc" {
		t.Errorf("spec = %+v", spec)
	}
}

func TestPlatformValuesUnderTeamValuesWithoutFences(t *testing.T) {
	platform := map[string]any{
		"controlPlane": map[string]any{
			"distro":      map[string]any{"k8s": map[string]any{"image": map[string]any{"tag": "v1.36.3"}}},
			"statefulSet": map[string]any{"resources": map[string]any{"limits": map[string]any{"cpu": "1", "memory": "2Gi"}}},
			"proxy":       map[string]any{"extraSANs": []any{"platform-san"}},
		},
		"exportKubeConfig": map[string]any{"server": "https://platform"},
	}
	team := &gpuvcv1.Team{Spec: gpuvcv1.TeamSpec{Pool: "a100", VCluster: &gpuvcv1.VClusterSpec{
		Values: &apiextensionsv1.JSON{Raw: []byte(`{"controlPlane": {"statefulSet": {"resources": {"limits": {"cpu": "2"}}}}}`)},
	}}}
	team.Name = "fraud"
	r := NewReconciler(nil, nil, nil, Options{PlatformValues: platform})
	spec := r.vclusterSpec(team)

	want := map[string]any{"controlPlane": map[string]any{
		"distro":      map[string]any{"k8s": map[string]any{"image": map[string]any{"tag": "v1.36.3"}}},
		"statefulSet": map[string]any{"resources": map[string]any{"limits": map[string]any{"cpu": "2", "memory": "2Gi"}}},
		"proxy":       map[string]any{},
	}}
	if diff := cmp.Diff(want, spec.ExtraValues); diff != "" {
		t.Errorf("extra values (-want +got):\n%s", diff)
	}
	if _, ok := platform["exportKubeConfig"]; !ok {
		t.Error("the platform values were modified")
	}
}

func TestServerURLNamingTheServiceInstallsWithTheInClusterName(t *testing.T) {
	team := &gpuvcv1.Team{Spec: gpuvcv1.TeamSpec{Pool: "a100"}}
	team.Name = "fraud"
	r := NewReconciler(nil, nil, nil, Options{
		ServerURL:            func(t *gpuvcv1.Team, svc ServiceAddress) string { return "https://" + svc.ClusterIP },
		ServerURLUsesService: true,
	})
	if got := r.vclusterSpec(team).KubeconfigServer; got != "https://fraud.team-fraud.svc" {
		t.Errorf("KubeconfigServer = %q, want the in-cluster name until the ClusterIP exists", got)
	}
	r.opts.ServerURLUsesService = false
	if got := r.vclusterSpec(team).KubeconfigServer; got != "https://" {
		t.Errorf("KubeconfigServer = %q, want the template's URL", got)
	}
}
