package team

import (
	"context"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpuvc/gpuvc/api/contract"
	"github.com/gpuvc/gpuvc/gpu/mig"
)

// UsageCollector exports, per team, the whole GPUs and MIG slices its pods request
// and its quota allows, read from the teams' ResourceQuotas when Prometheus
// scrapes (from the manager's cache, so a scrape costs no API call). Reservation
// pods count as the whole GPUs they hold; the shares handed out of them are the
// share controller's gpuvc_share_* metrics.
type UsageCollector struct {
	reader client.Reader
	used   *prometheus.Desc
	hard   *prometheus.Desc
}

// NewUsageCollector returns a collector reading quotas through reader.
func NewUsageCollector(reader client.Reader) *UsageCollector {
	labels := []string{"team", "resource"}
	return &UsageCollector{
		reader: reader,
		used: prometheus.NewDesc("gpuvc_team_gpu_requests",
			"GPU devices the team's pods request, by resource (nvidia.com/gpu, nvidia.com/mig-<profile>).", labels, nil),
		hard: prometheus.NewDesc("gpuvc_team_gpu_quota",
			"GPU devices the team's quota allows, by resource.", labels, nil),
	}
}

// Describe implements prometheus.Collector.
func (c *UsageCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.used
	ch <- c.hard
}

// Collect implements prometheus.Collector.
func (c *UsageCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	quotas := &corev1.ResourceQuotaList{}
	if err := c.reader.List(ctx, quotas, client.MatchingLabels{LabelManagedBy: managedBy}); err != nil {
		ch <- prometheus.NewInvalidMetric(c.used, err)
		return
	}
	for _, q := range quotas.Items {
		team := q.Labels[contract.LabelTeam]
		if q.Name != QuotaName || team == "" {
			continue
		}
		for desc, list := range map[*prometheus.Desc]corev1.ResourceList{c.used: q.Status.Used, c.hard: q.Status.Hard} {
			for name, qty := range list {
				if res, ok := gpuResource(name); ok {
					ch <- prometheus.MustNewConstMetric(desc, prometheus.GaugeValue, float64(qty.Value()), team, res)
				}
			}
		}
	}
}

// gpuResource turns a quota key such as requests.nvidia.com/mig-1g.10gb into the
// device resource it counts.
func gpuResource(name corev1.ResourceName) (string, bool) {
	res, ok := strings.CutPrefix(string(name), "requests.")
	if !ok {
		return "", false
	}
	if res == string(ResourceGPU) {
		return res, true
	}
	if _, err := mig.ParseResourceName(res); err == nil {
		return res, true
	}
	return "", false
}
