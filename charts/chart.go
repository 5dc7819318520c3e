package charts

import (
	"embed"
	"fmt"
	"io/fs"
	"strings"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
)

// chartFiles is the whole gpuvc chart; "all:" keeps templates/_helpers.tpl, which a
// plain pattern would skip.
//
//go:embed all:gpuvc
var chartFiles embed.FS

// ChartDir is the chart's folder inside this package (and the repository's charts/).
const ChartDir = "gpuvc"

// Names of objects the chart creates that other parts of gpuvc rely on. The names are
// fixed: gpuvc is installed once per cluster.
const (
	// ManagerServiceAccount is the manager's identity (system:serviceaccount:<ns>:gpuvc-manager).
	ManagerServiceAccount = "gpuvc-manager"
	// AgentServiceAccount is the node agent's identity.
	AgentServiceAccount = "gpuvc-agent"
	// WebhookConfigurationName names both webhook configurations.
	WebhookConfigurationName = "gpuvc-syncer"
	// MetricsServiceName is the manager's metrics Service (metrics.enabled).
	MetricsServiceName = "gpuvc-metrics"
	// WebhookServiceName is the Service the API server calls the webhook through (port 443).
	WebhookServiceName = "gpuvc-webhook"
	// WebhookSecretName holds the webhook's serving certificate (tls.crt, tls.key, ca.crt).
	WebhookSecretName = "gpuvc-webhook-tls"
	// WebhookCertDir is where the manager container finds WebhookSecretName's files.
	WebhookCertDir = "/tmp/k8s-webhook-server/serving-certs"
	// LeaderElectionID is the manager's lease in the release namespace.
	LeaderElectionID = "gpuvc-manager.gpuvc.dev"
)

// Chart loads the embedded gpuvc chart, with its CRDs, values and schema.
func Chart() (*chart.Chart, error) {
	var files []*loader.BufferedFile
	err := fs.WalkDir(chartFiles, ChartDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := chartFiles.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := strings.CutPrefix(p, ChartDir+"/")
		files = append(files, &loader.BufferedFile{Name: rel, Data: data})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading the embedded gpuvc chart: %w", err)
	}
	ch, err := loader.LoadFiles(files)
	if err != nil {
		return nil, fmt.Errorf("loading the embedded gpuvc chart: %w", err)
	}
	return ch, nil
}

// PrometheusRules is gpuvc's alert rules file as Prometheus loads it (rule_files);
// the chart renders the same groups as a PrometheusRule.
func PrometheusRules() ([]byte, error) {
	return chartFiles.ReadFile(ChartDir + "/files/prometheus-rules.yaml")
}
