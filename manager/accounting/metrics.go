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

var lostDesc = prometheus.NewDesc("gpuvc_team_gpu_seconds_lost_to_gpu_failure_total",
	"GPU time the team's pods drained for a failed GPU had held since they started (work lost to GPU failures), by pool; "+
		"also counted in gpuvc_team_gpu_seconds_total, where it was held.",
	[]string{"team", "pool"}, nil)

var (
	lastSampleDesc = prometheus.NewDesc("gpuvc_accounting_last_sample_timestamp_seconds",
		"When the accountant last sampled every team without an error (Unix time); exported by the leader only. "+
			"GPU time between two good samples is integrated at the next one; a stale value means gpuvc_team_gpu_seconds_total is not advancing.",
		nil, nil)
	intervalDesc = prometheus.NewDesc("gpuvc_accounting_interval_seconds",
		"The accountant's sampling interval (gpuvc manager --accounting-interval); exported by the leader only.", nil, nil)
)

type collector struct{}

// Register adds the gpuvc_team_gpu_seconds_total collector to reg once.
func Register(reg prometheus.Registerer) error {
	err := reg.Register(collector{})
	if errors.As(err, &prometheus.AlreadyRegisteredError{}) {
		return nil
	}
	return err
}

func (collector) Describe(ch chan<- *prometheus.Desc) {
	ch <- secondsDesc
	ch <- lostDesc
	ch <- lastSampleDesc
	ch <- intervalDesc
}

// Collect exports the ledger totals as counters: they come from the checkpoints,
// so a restarted manager continues the series instead of resetting it.
func (collector) Collect(ch chan<- prometheus.Metric) {
	a := current.Load()
	if a == nil {
		return
	}
	ch <- prometheus.MustNewConstMetric(intervalDesc, prometheus.GaugeValue, a.opts.Interval.Seconds())
	if t := a.lastGood.Load(); t > 0 {
		ch <- prometheus.MustNewConstMetric(lastSampleDesc, prometheus.GaugeValue, float64(t))
	}
	for team, s := range a.Totals() {
		for k, v := range s {
			if k.Kind == KindLost {
				ch <- prometheus.MustNewConstMetric(lostDesc, prometheus.CounterValue, v, team, k.Pool)
				continue
			}
			ch <- prometheus.MustNewConstMetric(secondsDesc, prometheus.CounterValue, v, team, k.Pool, k.Kind)
		}
	}
}
