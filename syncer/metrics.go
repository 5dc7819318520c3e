package syncer

import (
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the webhook's Prometheus metrics, labelled per team.
type Metrics struct {
	// Requests counts admission requests by team, webhook (mutate|validate|validate-dra),
	// operation and result (allowed|patched|denied|error).
	Requests *prometheus.CounterVec
	// Decisions counts refusals and changes by team, webhook and reason.
	Decisions *prometheus.CounterVec
	// Duration observes handling time by team, webhook and operation.
	Duration *prometheus.HistogramVec
}

// NewMetrics creates the metrics and registers them with reg (controller-runtime's
// metrics.Registry in the manager). Registering twice returns the collectors
// already registered, so several webhooks in one process share them.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		Requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gpuvc_syncer_admission_requests_total",
			Help: "Pod admission requests handled by the gpuvc syncer webhook.",
		}, []string{"team", "webhook", "operation", "result"}),
		Decisions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gpuvc_syncer_admission_decisions_total",
			Help: "Refusals and changes made by the gpuvc syncer webhook, by reason.",
		}, []string{"team", "webhook", "reason"}),
		Duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "gpuvc_syncer_admission_duration_seconds",
			Help:    "Time the gpuvc syncer webhook takes to answer an admission request.",
			Buckets: []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1},
		}, []string{"team", "webhook", "operation"}),
	}
	var err error
	if m.Requests, err = register(reg, m.Requests); err != nil {
		return nil, err
	}
	if m.Decisions, err = register(reg, m.Decisions); err != nil {
		return nil, err
	}
	if m.Duration, err = register(reg, m.Duration); err != nil {
		return nil, err
	}
	return m, nil
}

func register[C prometheus.Collector](reg prometheus.Registerer, c C) (C, error) {
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if existing, ok := are.ExistingCollector.(C); ok {
				return existing, nil
			}
		}
		return c, err
	}
	return c, nil
}

// observe records one request; a nil *Metrics records nothing.
func (m *Metrics) observe(team, webhook, op, result string, start time.Time, r Result) {
	if m == nil {
		return
	}
	if team == "" {
		team = "-"
	}
	m.Requests.WithLabelValues(team, webhook, op, result).Inc()
	m.Duration.WithLabelValues(team, webhook, op).Observe(time.Since(start).Seconds())
	for _, d := range r.Denials {
		m.Decisions.WithLabelValues(team, webhook, d.Reason).Inc()
	}
	for _, n := range r.Notes {
		m.Decisions.WithLabelValues(team, webhook, n.Reason).Inc()
	}
}
