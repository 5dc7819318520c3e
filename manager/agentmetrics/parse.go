package agentmetrics

import (
	"fmt"
	"io"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// UtilizationMetric is the agent's per-device gauge (gpu/nodeagent).
const UtilizationMetric = "gpuvc_team_gpu_utilization"

// PodUtilization reads an agent's text exposition: namespace/pod → the highest
// utilization among the devices the pod holds. Devices held by no pod are left out.
func PodUtilization(r io.Reader) (map[string]float64, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, err := p.TextToMetricFamilies(r)
	if err != nil {
		return nil, fmt.Errorf("parsing the agent's metrics: %w", err)
	}
	out := map[string]float64{}
	f := families[UtilizationMetric]
	if f == nil {
		return out, nil
	}
	for _, m := range f.GetMetric() {
		var ns, pod string
		for _, l := range m.GetLabel() {
			switch l.GetName() {
			case "namespace":
				ns = l.GetValue()
			case "pod":
				pod = l.GetValue()
			}
		}
		if ns == "" || pod == "" || m.GetGauge() == nil {
			continue
		}
		k := ns + "/" + pod
		if v, seen := out[k]; !seen || m.GetGauge().GetValue() > v {
			out[k] = m.GetGauge().GetValue()
		}
	}
	return out, nil
}
