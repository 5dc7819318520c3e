package team

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gpuvcv1 "github.com/gpuvc/gpuvc/api/v1alpha1"
)

// QueueCollector exports each queueing team's standing in Kueue per GPU kind,
// from the Teams' status.queue in the manager's cache (a scrape costs no API
// call): gpuvc_team_queue_gpus{team,pool,resource,state} with state
// guaranteed, borrowing_limit, used, borrowed, lent or queued.
type QueueCollector struct {
	reader client.Reader
	gpus   *prometheus.Desc
}

// NewQueueCollector returns a collector reading Teams through reader.
func NewQueueCollector(reader client.Reader) *QueueCollector {
	return &QueueCollector{reader: reader, gpus: prometheus.NewDesc("gpuvc_team_queue_gpus",
		"A queueing team's GPU devices in Kueue by resource (nvidia.com/gpu, nvidia.com/mig-<profile>) and state: "+
			"guaranteed, borrowing_limit, used (reserved for admitted pods), borrowed (used beyond the guarantee), "+
			"lent (its guarantee other teams of the pool use now), queued (requested by waiting pods).",
		[]string{"team", "pool", "resource", "state"}, nil)}
}

// Describe implements prometheus.Collector.
func (c *QueueCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.gpus }

// Collect implements prometheus.Collector.
func (c *QueueCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	teams := &gpuvcv1.TeamList{}
	if err := c.reader.List(ctx, teams); err != nil {
		ch <- prometheus.NewInvalidMetric(c.gpus, err)
		return
	}
	for _, t := range teams.Items {
		if t.Spec.Queueing == nil || t.Status.Queue == nil {
			continue
		}
		for _, f := range t.Status.Queue.Flavors {
			for state, n := range map[string]int64{
				"guaranteed": f.Guaranteed, "borrowing_limit": f.BorrowingLimit, "used": f.Used,
				"borrowed": f.Borrowed, "lent": f.Lent, "queued": f.Queued,
			} {
				ch <- prometheus.MustNewConstMetric(c.gpus, prometheus.GaugeValue, float64(n), t.Name, t.Spec.Pool, f.Resource, state)
			}
		}
	}
}
