package manager

import (
	"strings"
	"testing"

	"github.com/gpuvc/gpuvc/manager/idle"
)

// TestAgentMetricsRefusedBeforeUse: bad agent-metrics settings fail manager.New
// with the flag to fix, before anything runs (the loop itself is tested in
// manager/idle TestIdleGPUPodsFromAgentMetrics).
func TestAgentMetricsRefusedBeforeUse(t *testing.T) {
	for name, tc := range map[string]struct {
		opts AgentMetrics
		want string
	}{
		"port out of range":         {AgentMetrics{Port: 70000, Namespace: "gpuvc-system"}, "--agent-metrics-port 70000: not a TCP port"},
		"no namespace":              {AgentMetrics{Port: 9402}, "pass --agent-namespace"},
		"address without port":      {AgentMetrics{Addresses: []string{"10.0.0.7"}}, `--agent-metrics-address "10.0.0.7": not host:port`},
		"address port out of range": {AgentMetrics{Addresses: []string{"10.0.0.7:0"}}, `--agent-metrics-address "10.0.0.7:0": not host:port with a TCP port (1-65535)`},
	} {
		t.Run(name, func(t *testing.T) {
			err := addGPUPodReaper(nil, tc.opts, idle.Options{})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want one containing %q", err, tc.want)
			}
		})
	}
	if err := addGPUPodReaper(nil, AgentMetrics{}, idle.Options{}); err != nil {
		t.Fatalf("port 0 (off): %v", err)
	}
}
