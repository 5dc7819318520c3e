package nodeagent

import (
	"context"
	"strconv"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/gpuvc/gpuvc/gpu/usage"
)

// UtilizationCollector exports each GPU's and MIG device's utilization and
// memory with the pod and team holding it, read at scrape time.
type UtilizationCollector struct {
	Node string
	// Read samples the devices (usage.Read on a node).
	Read func() ([]usage.Sample, error)
	// Owners maps device UUIDs to the containers holding them (DeviceOwners).
	Owners func(ctx context.Context) (map[string]DeviceOwner, error)
	// Log reports failed scrapes; the metrics are then left out.
	Log logr.Logger
}

var (
	utilizationDesc = prometheus.NewDesc("gpuvc_team_gpu_utilization",
		"Percent of time a kernel ran on the GPU over NVML's last sample period, with the pod holding it (kubelet pod-resources). Not reported for MIG devices.",
		utilizationLabels, nil)
	memoryUsedDesc = prometheus.NewDesc("gpuvc_team_gpu_memory_used_bytes",
		"GPU or MIG device memory in use, with the pod holding the device.", utilizationLabels, nil)
	memoryTotalDesc = prometheus.NewDesc("gpuvc_team_gpu_memory_total_bytes",
		"GPU or MIG device memory, with the pod holding the device.", utilizationLabels, nil)
)

// utilizationLabels: UUID (dcgm-exporter's UUID label, for joins) and gpu index
// (dcgm-exporter's gpu); team/namespace/pod/container empty for idle devices.
var utilizationLabels = []string{"node", "gpu", "UUID", "mig", "team", "namespace", "pod", "container"}

func (c *UtilizationCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- utilizationDesc
	ch <- memoryUsedDesc
	ch <- memoryTotalDesc
}

func (c *UtilizationCollector) Collect(ch chan<- prometheus.Metric) {
	samples, err := c.Read()
	if err != nil {
		c.Log.Error(err, "reading GPU utilization")
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	owners, err := c.Owners(ctx)
	if err != nil {
		c.Log.Error(err, "mapping GPUs to pods")
		owners = nil // the devices are still exported, without owners
	}
	for _, s := range samples {
		o := owners[s.UUID]
		labels := []string{c.Node, strconv.Itoa(s.GPU), s.UUID, strconv.FormatBool(s.MIG), o.Team(), o.Namespace, o.Pod, o.Container}
		if s.UtilizationPercent != nil {
			ch <- prometheus.MustNewConstMetric(utilizationDesc, prometheus.GaugeValue, *s.UtilizationPercent, labels...)
		}
		ch <- prometheus.MustNewConstMetric(memoryUsedDesc, prometheus.GaugeValue, float64(s.MemoryUsedBytes), labels...)
		ch <- prometheus.MustNewConstMetric(memoryTotalDesc, prometheus.GaugeValue, float64(s.MemoryTotalBytes), labels...)
	}
}
