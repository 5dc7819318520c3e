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
	// Actions counts what the agent did: quarantine, return, clear, taint,
	// untaint, cordon, uncordon, eviction, eviction_failed.
	Actions *prometheus.CounterVec
	// Quarantined is 0 for a GPU in service, 1 on probation, 2 quarantined
	// for good.
	Quarantined *prometheus.GaugeVec
	// Returns counts the GPUs' returns to service after a probation.
	Returns *prometheus.CounterVec
	// Lost counts the GPU-seconds the pods drained for a failed GPU had held
	// since they started, per team.
	Lost *prometheus.CounterVec

	gpus map[string]string // UUID → index, every GPU of the node
}

// NewHealthMetrics registers the series on reg for the node's GPUs (index →
// UUID order of the inventory).
func NewHealthMetrics(reg prometheus.Registerer, gpus []string) (*HealthMetrics, error) {
	m := &HealthMetrics{
		Healthy: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "gpuvc_agent_gpu_healthy",
			Help: "1 while the GPU is in service, 0 while it is out (probation or permanent quarantine after a critical XID, double-bit ECC error or loss).",
		}, []string{"node", "gpu", "uuid"}),
		Failures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gpuvc_agent_gpu_failures_total",
			Help: "Critical GPU failures seen by the agent, by kind (XID, DoubleBitECC, GPULost) and XID.",
		}, []string{"node", "gpu", "uuid", "kind", "xid"}),
		Actions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gpuvc_agent_gpu_failure_actions_total",
			Help: "What the agent did about failed GPUs: quarantine, return, clear, taint, untaint, cordon, uncordon, eviction, eviction_failed.",
		}, []string{"node", "action"}),
		Quarantined: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "gpuvc_agent_gpu_quarantined",
			Help: "0 while the GPU is in service, 1 while it is out on probation, 2 while it is quarantined for good (until an operator clears it).",
		}, []string{"node", "gpu", "uuid"}),
		Returns: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gpuvc_agent_gpu_returns_total",
			Help: "Returns of a GPU to service after a probation with no new error.",
		}, []string{"node", "gpu", "uuid"}),
		Lost: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gpuvc_agent_gpu_seconds_lost_total",
			Help: "GPU-seconds the team's pods drained for a failed GPU had held since they started (work lost to GPU failures).",
		}, []string{"node", "team"}),
		gpus: map[string]string{},
	}
	for i, uuid := range gpus {
		m.gpus[uuid] = strconv.Itoa(i)
	}
	for _, c := range []prometheus.Collector{m.Healthy, m.Failures, m.Actions, m.Quarantined, m.Returns, m.Lost} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// state sets the gauges of every GPU from the records of those out.
func (m *HealthMetrics) state(node string, out []GPURecord) {
	if m == nil {
		return
	}
	bad := map[string]GPUState{}
	for _, r := range out {
		bad[r.Last.UUID] = r.State
	}
	for uuid, index := range m.gpus {
		healthy, q := 1.0, 0.0
		switch bad[uuid] {
		case StateProbation:
			healthy, q = 0, 1
		case StatePermanent:
			healthy, q = 0, 2
		}
		m.Healthy.WithLabelValues(node, index, uuid).Set(healthy)
		m.Quarantined.WithLabelValues(node, index, uuid).Set(q)
	}
}

func (m *HealthMetrics) returned(node, uuid string) {
	if m == nil {
		return
	}
	m.Returns.WithLabelValues(node, m.gpus[uuid], uuid).Inc()
}

func (m *HealthMetrics) lost(node, team string, secs float64) {
	if m == nil {
		return
	}
	m.Lost.WithLabelValues(node, team).Add(secs)
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
