package nodeagent

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gpuvc/gpuvc/gpu/health"
)

// HealthMetrics are the agent's GPU health series. A nil *HealthMetrics
// records nothing.
type HealthMetrics struct {
	// Healthy is 1 for a healthy GPU, 0 for a failed one.
	Healthy *prometheus.GaugeVec
	// Failures counts critical failures seen, by kind and XID.
	Failures *prometheus.CounterVec
	// Actions counts what the agent did: taint, cordon, eviction,
	// eviction_failed.
	Actions *prometheus.CounterVec

	gpus map[string]string // UUID → index, every GPU of the node
}

// NewHealthMetrics registers the series on reg for the node's GPUs (index →
// UUID order of the inventory).
func NewHealthMetrics(reg prometheus.Registerer, gpus []string) (*HealthMetrics, error) {
	m := &HealthMetrics{
		Healthy: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "gpuvc_agent_gpu_healthy",
			Help: "1 while the GPU is healthy, 0 once a critical XID, double-bit ECC error or loss was seen.",
		}, []string{"node", "gpu", "uuid"}),
		Failures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gpuvc_agent_gpu_failures_total",
			Help: "Critical GPU failures seen by the agent, by kind (XID, DoubleBitECC, GPULost) and XID.",
		}, []string{"node", "gpu", "uuid", "kind", "xid"}),
		Actions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gpuvc_agent_gpu_failure_actions_total",
			Help: "What the agent did about failed GPUs: taint, cordon, eviction, eviction_failed.",
		}, []string{"node", "action"}),
		gpus: map[string]string{},
	}
	for i, uuid := range gpus {
		m.gpus[uuid] = strconv.Itoa(i)
	}
	for _, c := range []prometheus.Collector{m.Healthy, m.Failures, m.Actions} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

func (m *HealthMetrics) healthy(node string, failed []health.Event) {
	if m == nil {
		return
	}
	bad := map[string]bool{}
	for _, e := range failed {
		bad[e.UUID] = true
	}
	for uuid, index := range m.gpus {
		v := 1.0
		if bad[uuid] {
			v = 0
		}
		m.Healthy.WithLabelValues(node, index, uuid).Set(v)
	}
}

func (m *HealthMetrics) failure(node string, e health.Event) {
	if m == nil {
		return
	}
	xid := ""
	if e.Kind == health.KindXID {
		xid = strconv.FormatUint(e.XID, 10)
	}
	m.Failures.WithLabelValues(node, strconv.Itoa(e.Index), e.UUID, string(e.Kind), xid).Inc()
}

func (m *HealthMetrics) action(node, action string) {
	if m == nil {
		return
	}
	m.Actions.WithLabelValues(node, action).Inc()
}
