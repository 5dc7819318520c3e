package agent

import (
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/events"

	"github.com/gpuvc/gpuvc/gpu/nodeagent"
	"github.com/gpuvc/gpuvc/gpu/runtimeconfig"
)

// runtimeOff turns the container-runtime check off (--gpu-runtime=off).
const runtimeOff = "off"

// judge reads the toolkit's configuration and decides. A simulated node
// without --nvidia-toolkit-config has the hardened configuration
// (runtimeconfig.Simulated); with the flag, the files it names are judged, so
// tests give a simulated node an unsafe one.
func (f *flags) judge(simulatedDefault bool) func() runtimeconfig.Verdict {
	return func() runtimeconfig.Verdict {
		in := runtimeconfig.Input{DeviceListStrategy: f.deviceStrategy}
		if simulatedDefault {
			in.Files = []runtimeconfig.File{{Path: runtimeconfig.SimulatedPath, Data: []byte(runtimeconfig.Simulated)}}
		} else {
			in.Files = runtimeconfig.Read(f.hostRoot, f.toolkitConfig)
		}
		return runtimeconfig.Judge(in)
	}
}

// runtimeCheck builds the runtime check: events through rec, metrics on reg,
// checked every --interval.
func (f *flags) runtimeCheck(client kubernetes.Interface, policy nodeagent.RuntimePolicy, reg prometheus.Registerer, rec events.EventRecorder, simulatedDefault bool) (*nodeagent.RuntimeCheck, error) {
	m, err := nodeagent.NewRuntimeMetrics(reg)
	if err != nil {
		return nil, err
	}
	return &nodeagent.RuntimeCheck{Client: client, NodeName: f.nodeName, Policy: policy, Judge: f.judge(simulatedDefault),
		Recorder: rec, Metrics: m, Resync: f.interval}, nil
}
