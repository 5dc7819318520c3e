package share

import (
	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the share controller's per-team metrics. Register them once per
// registry (controller-runtime's metrics.Registry in the manager) and share them
// between controller instances.
type Metrics struct {
	// Reservations is the number of reservation pods (whole GPUs) a team holds.
	Reservations *prometheus.GaugeVec
	// AllocatedGPUs is the sum of the shares assigned, in GPUs (0.3 + 0.5 = 0.8).
	AllocatedGPUs *prometheus.GaugeVec
	// GatedPods is the number of share pods still waiting for a GPU.
	GatedPods *prometheus.GaugeVec
	// UngateLatency is the time from a share pod's creation to the removal of
	// its gate.
	UngateLatency *prometheus.HistogramVec
}

// NewMetrics creates the metrics and registers them with reg.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		Reservations: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "gpuvc_share_reservations",
			Help: "Reservation pods (whole GPUs held for sharing) per team.",
		}, []string{"team"}),
		AllocatedGPUs: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "gpuvc_share_allocated_gpus",
			Help: "GPU shares assigned to pods per team, in GPUs.",
		}, []string{"team"}),
		GatedPods: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "gpuvc_share_gated_pods",
			Help: "Share pods per team still held by the gpuvc.dev/gpu-share scheduling gate.",
		}, []string{"team"}),
		UngateLatency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "gpuvc_share_ungate_latency_seconds",
			Help:    "Time from a share pod's creation to the removal of its scheduling gate, per team.",
			Buckets: []float64{0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 1800},
		}, []string{"team"}),
	}
	for _, c := range []prometheus.Collector{m.Reservations, m.AllocatedGPUs, m.GatedPods, m.UngateLatency} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}
