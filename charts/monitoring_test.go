package charts

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

const (
	rulesFile     = "gpuvc/files/prometheus-rules.yaml"
	rulesTestFile = "testdata/prometheus-rules-test.yaml"
)

// promtool checks the rules file and runs its unit tests (every alert firing
// and not firing). promtool comes with Debian's prometheus package, which
// .ci/host-packages installs.
func TestPrometheusRules(t *testing.T) {
	if testing.Short() {
		t.Skip("promtool: not under -short")
	}
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Fatal("promtool not found: install Debian's prometheus package (bash .ci/host-packages does, as root)")
	}
	for _, args := range [][]string{{"check", "rules", rulesFile}, {"test", "rules", rulesTestFile}} {
		out, err := exec.Command(promtool, args...).CombinedOutput()
		if err != nil {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}

// Every alert has a runbook section in docs/troubleshooting.md, which its
// description links to, and a promtool test.
func TestEveryAlertHasARunbookAndATest(t *testing.T) {
	var rules struct {
		Groups []struct {
			Rules []struct {
				Alert       string            `json:"alert"`
				Annotations map[string]string `json:"annotations"`
			} `json:"rules"`
		} `json:"groups"`
	}
	readYAML(t, rulesFile, &rules)
	docs, err := os.ReadFile("../docs/troubleshooting.md")
	if err != nil {
		t.Fatal(err)
	}
	tests, err := os.ReadFile(rulesTestFile)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			n++
			anchor := "docs/troubleshooting.md#" + strings.ToLower(r.Alert)
			if !strings.Contains(r.Annotations["description"], anchor) || r.Annotations["summary"] == "" {
				t.Errorf("%s: needs a summary and a description linking %s", r.Alert, anchor)
			}
			if !strings.Contains(string(docs), "\n### "+r.Alert+"\n") {
				t.Errorf("%s: docs/troubleshooting.md has no section \"### %s\"", r.Alert, r.Alert)
			}
			if !strings.Contains(string(tests), "alertname: "+r.Alert+"\n") {
				t.Errorf("%s: no promtool test in %s", r.Alert, rulesTestFile)
			}
		}
	}
	if n < 10 {
		t.Errorf("%d alerts read; the rules file lost some", n)
	}
}

func readYAML(t *testing.T, path string, into any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, into); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// ServiceMonitor and PrometheusRule appear where the cluster serves the
// Operator's CRDs (auto, the default) or a value asks for them, never else;
// the PrometheusRule holds exactly the rules file's groups.
func TestOperatorObjects(t *testing.T) {
	const sm, pr = "monitoring.coreos.com/v1/ServiceMonitor", "monitoring.coreos.com/v1/PrometheusRule"
	tests := map[string]struct {
		values   string
		apis     []string
		wantSM   bool
		wantRule bool
	}{
		"auto, no Operator":         {"", nil, false, false},
		"auto, Operator":            {"", []string{sm, pr}, true, true},
		"auto, ServiceMonitor only": {"", []string{sm}, true, false},
		"forced on":                 {"metrics: {serviceMonitor: {enabled: true}, prometheusRule: {enabled: true}}", nil, true, true},
		"off with the Operator":     {"metrics: {serviceMonitor: {enabled: false}, prometheusRule: {enabled: false}}", []string{sm, pr}, false, false},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			m, err := renderFor(tc.values, tc.apis...)
			if err != nil {
				t.Fatal(err)
			}
			if got := m.find("ServiceMonitor", "gpuvc-manager") != nil; got != tc.wantSM {
				t.Errorf("ServiceMonitor rendered: %v, want %v", got, tc.wantSM)
			}
			rule := m.find("PrometheusRule", "gpuvc")
			if (rule != nil) != tc.wantRule {
				t.Fatalf("PrometheusRule rendered: %v, want %v", rule != nil, tc.wantRule)
			}
			if rule == nil {
				return
			}
			var file map[string]any
			readYAML(t, rulesFile, &file)
			if diff := cmp.Diff(file["groups"], rule.Object["spec"].(map[string]any)["groups"]); diff != "" {
				t.Errorf("PrometheusRule groups differ from %s (-file +rendered):\n%s", rulesFile, diff)
			}
		})
	}
}

// prometheus.io/* annotations on the manager's and the agents' pods, for a
// Prometheus that discovers pods (the trial's does).
func TestScrapeAnnotations(t *testing.T) {
	want := func(port string) map[string]string {
		return map[string]string{"prometheus.io/scrape": "true", "prometheus.io/port": port, "prometheus.io/path": "/metrics"}
	}
	has := func(got map[string]string, w map[string]string) bool {
		for k, v := range w {
			if got[k] != v {
				return false
			}
		}
		return true
	}
	m := mustRender(t, "")
	if d := get[appsv1.Deployment](t, m, "Deployment", "gpuvc-manager"); !has(d.Spec.Template.Annotations, want("8080")) {
		t.Errorf("manager pod annotations %v", d.Spec.Template.Annotations)
	}
	if ds := get[appsv1.DaemonSet](t, m, "DaemonSet", "gpuvc-agent"); !has(ds.Spec.Template.Annotations, want("9402")) {
		t.Errorf("agent pod annotations %v", ds.Spec.Template.Annotations)
	}
	m = mustRender(t, "metrics: {scrapeAnnotations: false}")
	if d := get[appsv1.Deployment](t, m, "Deployment", "gpuvc-manager"); d.Spec.Template.Annotations["prometheus.io/scrape"] != "" {
		t.Errorf("scrapeAnnotations false still annotates: %v", d.Spec.Template.Annotations)
	}
}

// Dashboards ship as ConfigMaps for Grafana's sidecar, each holding its file
// unchanged; off by default.
func TestDashboardConfigMaps(t *testing.T) {
	if m := mustRender(t, ""); m.find("ConfigMap", "gpuvc-platform-dashboard") != nil {
		t.Error("dashboards rendered although dashboards.enabled is false")
	}
	m := mustRender(t, "dashboards: {enabled: true}")
	files, err := filepath.Glob(filepath.Join(dashboardsDir, "*.json"))
	if err != nil || len(files) != 2 {
		t.Fatalf("dashboards %v, %v; want the platform and team views", files, err)
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".json")
		cm := get[corev1.ConfigMap](t, m, "ConfigMap", name+"-dashboard")
		if cm.Labels["grafana_dashboard"] != "1" || cm.Annotations["grafana_folder"] != "gpuvc" {
			t.Errorf("%s: labels %v annotations %v", cm.Name, cm.Labels, cm.Annotations)
		}
		b, _ := os.ReadFile(f)
		if strings.TrimSpace(cm.Data[filepath.Base(f)]) != strings.TrimSpace(string(b)) {
			t.Errorf("%s does not hold %s unchanged", cm.Name, f)
		}
	}
}

// Dashboards and alerts use only metrics gpuvc exports: every gpuvc_* name in
// them is declared in the product's Go code (histograms with their suffixes).
func TestDashboardsAndAlertsUseGpuvcMetrics(t *testing.T) {
	declared := declaredMetrics(t)
	name := regexp.MustCompile(`gpuvc_[a-z_]+`)
	check := func(where, expr string) {
		for _, m := range name.FindAllString(expr, -1) {
			if !declared[m] {
				t.Errorf("%s: %s is not a metric gpuvc exports", where, m)
			}
		}
	}
	panels, err := DashboardPanels()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range panels {
		if len(p.Exprs) == 0 {
			t.Errorf("%s / %s: no query", p.Dashboard, p.Title)
		}
		for _, e := range p.Exprs {
			check(p.Dashboard+" / "+p.Title, e)
		}
	}
	rules, _ := os.ReadFile(rulesFile)
	check(rulesFile, string(rules))
}

// declaredMetrics scans the product's Go files (not tests) for metric names.
func declaredMetrics(t *testing.T) map[string]bool {
	t.Helper()
	decl := regexp.MustCompile(`"(gpuvc_[a-z_]+)"`)
	out := map[string]bool{}
	err := filepath.WalkDir("..", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && slices.Contains([]string{".git", "e2e", "testdata"}, d.Name()) {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, m := range decl.FindAllStringSubmatch(string(b), -1) {
			out[m[1]] = true
			for _, s := range []string{"_bucket", "_sum", "_count"} {
				out[m[1]+s] = true
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !out["gpuvc_team_gpu_seconds_total"] {
		t.Fatal("the scan found no metric declarations")
	}
	return out
}
