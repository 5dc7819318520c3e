package accounting

import (
	"errors"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// current is the Accountant that runs now; the collector reads it. A process
// registers one collector (tests run several managers in turn).
var current atomic.Pointer[Accountant]

var secondsDesc = prometheus.NewDesc("gpuvc_team_gpu_seconds_total",
	"GPU time the team's pods held, in GPU-seconds, by pool and kind (whole, mig, fraction, reserved); continues across manager restarts.",
	[]string{"team", "pool", "kind"}, nil)

type collector struct{}

// Register adds the gpuvc_team_gpu_seconds_total collector to reg once.
func Register(reg prometheus.Registerer) error {
	err := reg.Register(collector{})
	if errors.As(err, &prometheus.AlreadyRegisteredError{}) {
		return nil
	}
	return err
}

func (collector) Describe(ch chan<- *prometheus.Desc) { ch <- secondsDesc }

// Collect exports the ledger totals as counters: they come from the checkpoints,
// so a restarted manager continues the series instead of resetting it.
func (collector) Collect(ch chan<- prometheus.Metric) {
	a := current.Load()
	if a == nil {
		return
	}
	for team, s := range a.Totals() {
		for k, v := range s {
			ch <- prometheus.MustNewConstMetric(secondsDesc, prometheus.CounterValue, v, team, k.Pool, k.Kind)
		}
	}
}
