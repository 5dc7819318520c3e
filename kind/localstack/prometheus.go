package localstack

import (
	"context"
	"io"
	"path/filepath"

	"github.com/gpuvc/gpuvc/kind/localnode"
	"github.com/gpuvc/gpuvc/kind/localprom"
)

// PrometheusDir holds the stack's Prometheus (configuration, series, log, pid).
func PrometheusDir(dir string) string { return filepath.Join(dir, "prometheus") }

// StartPrometheus runs Prometheus detached beside the stack in dir (Down stops
// it), scraping managerMetrics (host:port; the manager's metrics Service) and,
// with a real node, its GPU agent, with the given rules; a Prometheus already
// running there is reused. It returns Prometheus' URL.
func StartPrometheus(ctx context.Context, dir, managerMetrics string, rules []byte, log io.Writer) (string, error) {
	pdir := PrometheusDir(dir)
	if url := localprom.Running(pdir); url != "" {
		return url, nil
	}
	targets := map[string][]string{"gpuvc-manager": {managerMetrics}}
	if HasRealNode(dir) {
		targets["gpuvc-node-agent"] = []string{localnode.GPUAgentMetricsAddress()}
	}
	p, err := localprom.Start(ctx, localprom.Options{Dir: pdir, Targets: targets, Rules: rules, Detached: true, Log: log})
	if err != nil {
		return "", err
	}
	return p.URL, nil
}
