package team

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpuvc/gpuvc/api/contract"
	gpuvcv1 "github.com/gpuvc/gpuvc/api/v1alpha1"
)

// PoolCollector exports what the dashboards need to set teams beside their
// pools: each pool's GPU devices (allocatable on its Ready, schedulable nodes)
// and which pool each team draws from. Read from the manager's cache at scrape.
type PoolCollector struct {
	reader client.Reader
	gpus   *prometheus.Desc
	info   *prometheus.Desc
}

// NewPoolCollector returns a collector reading Nodes and Teams through reader.
func NewPoolCollector(reader client.Reader) *PoolCollector {
	return &PoolCollector{
		reader: reader,
		gpus: prometheus.NewDesc("gpuvc_pool_gpus",
			"GPU devices a node pool offers, by resource (nvidia.com/gpu, nvidia.com/mig-<profile>): allocatable on its Ready, schedulable nodes (label gpuvc.dev/pool).",
			[]string{"pool", "resource"}, nil),
		info: prometheus.NewDesc("gpuvc_team_info",
			"1 for every team, with the node pool it draws from: join on team to put a team's series in its pool.",
			[]string{"team", "pool"}, nil),
	}
}

// Describe implements prometheus.Collector.
func (c *PoolCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.gpus
	ch <- c.info
}

// Collect implements prometheus.Collector.
func (c *PoolCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	nodes := &corev1.NodeList{}
	if err := c.reader.List(ctx, nodes, client.HasLabels{contract.LabelPool}); err != nil {
		ch <- prometheus.NewInvalidMetric(c.gpus, err)
	} else {
		for key, n := range poolGPUs(nodes.Items) {
			ch <- prometheus.MustNewConstMetric(c.gpus, prometheus.GaugeValue, float64(n), key[0], key[1])
		}
	}
	teams := &gpuvcv1.TeamList{}
	if err := c.reader.List(ctx, teams); err != nil {
		ch <- prometheus.NewInvalidMetric(c.info, err)
		return
	}
	for _, t := range teams.Items {
		ch <- prometheus.MustNewConstMetric(c.info, prometheus.GaugeValue, 1, t.Name, t.Spec.Pool)
	}
}

// poolGPUs sums GPU devices by pool and resource over nodes that can take pods.
func poolGPUs(nodes []corev1.Node) map[[2]string]int64 {
	out := map[[2]string]int64{}
	for _, n := range nodes {
		if n.Spec.Unschedulable || !nodeReady(&n) {
			continue
		}
		pool := n.Labels[contract.LabelPool]
		for name, qty := range n.Status.Allocatable {
			if res, ok := gpuResource("requests." + name); ok && qty.Value() > 0 {
				out[[2]string{pool, res}] += qty.Value()
			}
		}
	}
	return out
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
