package scale

import (
	"context"
	"fmt"
	"net/http"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// scrape reads the manager's metrics endpoint.
func (m *managerProcess) scrape(ctx context.Context) (map[string]*dto.MetricFamily, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, m.Metrics, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: %s", m.Metrics, resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	return p.TextToMetricFamilies(resp.Body)
}

// teamQueue reads how many Team reconciles have finished (any result) and how
// many Teams wait in the manager's work queue.
func (m *managerProcess) teamQueue(ctx context.Context) (reconciled, depth float64, err error) {
	fams, err := m.scrape(ctx)
	if err != nil {
		return 0, 0, err
	}
	team := func(mt *dto.Metric) bool { return labelOf(mt, "controller") == "team" }
	return sum(fams["controller_runtime_reconcile_total"], team), sum(fams["workqueue_depth"], team), nil
}

// metrics reads the API requests the manager has made by HTTP method
// (client-go's rest_client_requests_total) and its Go heap in use, in bytes.
func (m *managerProcess) metrics(ctx context.Context) (requests map[string]float64, heap float64, err error) {
	fams, err := m.scrape(ctx)
	if err != nil {
		return nil, 0, err
	}
	requests = map[string]float64{}
	for _, mt := range fams["rest_client_requests_total"].GetMetric() {
		requests[labelOf(mt, "method")] += mt.GetCounter().GetValue()
	}
	return requests, sum(fams["go_memstats_heap_inuse_bytes"], nil), nil
}

// sum adds a family's counters or gauges, of the series keep accepts (nil: all).
func sum(f *dto.MetricFamily, keep func(*dto.Metric) bool) float64 {
	total := 0.0
	for _, mt := range f.GetMetric() {
		if keep != nil && !keep(mt) {
			continue
		}
		total += mt.GetCounter().GetValue() + mt.GetGauge().GetValue()
	}
	return total
}

func labelOf(mt *dto.Metric, name string) string {
	for _, l := range mt.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}
