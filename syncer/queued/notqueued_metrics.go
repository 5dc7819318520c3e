package queued

import (
	"github.com/prometheus/client_golang/prometheus"
)

// notQueuedPods is the metric of NotQueued: the pods told, by team.
var notQueuedPods = prometheus.NewDesc("gpuvc_team_not_queued_pods",
	"Pods of a queueing team that gpuvc sent to Kueue but for which Kueue made no Workload within the grace period "+
		"(each got the Warning event NotQueued): they stay Pending until deleted; check that Kueue runs and its pod integration takes the team's namespace.",
	[]string{"team"}, nil)

// Describe implements prometheus.Collector.
func (n *NotQueued) Describe(ch chan<- *prometheus.Desc) { ch <- notQueuedPods }

// Collect implements prometheus.Collector: one gauge per team with such pods
// (none: no series).
func (n *NotQueued) Collect(ch chan<- prometheus.Metric) {
	n.mu.Lock()
	perTeam := map[string]int{}
	for _, p := range n.told {
		perTeam[p.team]++
	}
	n.mu.Unlock()
	for team, count := range perTeam {
		ch <- prometheus.MustNewConstMetric(notQueuedPods, prometheus.GaugeValue, float64(count), team)
	}
}
