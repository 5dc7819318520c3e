package localprom

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/gpuvc/gpuvc/charts"
)

// A real Prometheus with the configuration Start writes scrapes its targets and
// evaluates gpuvc's rules: a GPU reported unhealthy raises GpuvcGPUUnhealthy
// (pending: its for is a minute). Stopped, it is gone.
func TestPrometheusScrapesAndEvaluatesGpuvcRules(t *testing.T) {
	if testing.Short() {
		t.Skip("integration: runs Prometheus")
	}
	if _, err := Binary(); err != nil {
		t.Fatal(err)
	}
	agent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, `gpuvc_agent_gpu_healthy{node="system-0",gpu="3",uuid="GPU-3"} 0`)
	}))
	defer agent.Close()
	rules, err := charts.PrometheusRules()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := t.TempDir()
	p, err := Start(ctx, Options{Dir: dir, Rules: rules, Targets: map[string][]string{"agents": {agent.Listener.Addr().String()}}, Interval: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	if Running(dir) != p.URL {
		t.Errorf("Running(%s) = %q, want %q", dir, Running(dir), p.URL)
	}
	var last []Sample
	err = wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		last, err = Query(ctx, p.URL, `ALERTS{alertname="GpuvcGPUUnhealthy",gpu="3",node="system-0"}`)
		return err == nil && len(last) == 1, err
	})
	if err != nil {
		t.Fatalf("no GpuvcGPUUnhealthy alert: %v (last %v)", err, last)
	}
	if last[0].Metric["alertstate"] != "pending" {
		t.Errorf("alert %v, want pending (for: 1m)", last[0].Metric)
	}
	if up, err := Query(ctx, p.URL, `up{job="agents"}`); err != nil || len(up) != 1 || up[0].Value != 1 {
		t.Errorf("up{job=agents} = %v, %v", up, err)
	}
	if _, err := Query(ctx, p.URL, `sum(`); err == nil {
		t.Error("a query Prometheus cannot parse must be an error")
	}
	if err := StopDetached(dir); err != nil {
		t.Fatal(err)
	}
	if Running(dir) != "" {
		t.Error("Prometheus still runs after StopDetached")
	}
	if _, err := os.Stat(dir); err != nil {
		t.Fatal(err)
	}
}
