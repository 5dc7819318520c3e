package manager

import (
	"context"
	"fmt"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/gpuvc/gpuvc/manager/agentmetrics"
	"github.com/gpuvc/gpuvc/manager/idle"
)

// AgentMetrics says where the node agents (`gpuvc agent --metrics-bind-address`)
// serve /metrics.
type AgentMetrics struct {
	// Port of the agents' metrics endpoint; 0 leaves spec.idle.gpuPods unapplied.
	Port int
	// Namespace of the agent pods (the chart's release namespace).
	Namespace string
}

// addGPUPodReaper runs the idle GPU-pod policy on the leader (a RunnableFunc
// needs leader election) when the agents' metrics are on, every idleOpts.Interval
// and on idleOpts.Clock (the idle policy's clock, which tests set). Each look
// scrapes every agent once.
func addGPUPodReaper(mgr ctrl.Manager, opts AgentMetrics, idleOpts idle.Options) error {
	if opts.Port == 0 {
		return nil
	}
	if opts.Port < 0 || opts.Port > 65535 {
		return fmt.Errorf("--agent-metrics-port %d: not a TCP port (1-65535, or 0 to leave spec.idle.gpuPods unapplied)", opts.Port)
	}
	if opts.Namespace == "" {
		return fmt.Errorf("--agent-metrics-port %d set but the agents' namespace is empty: pass --agent-namespace (in a pod it defaults to $POD_NAMESPACE)", opts.Port)
	}
	interval := idleOpts.Interval
	if interval <= 0 {
		interval = 30 * time.Second
	}
	src := &agentmetrics.Source{Reader: mgr.GetAPIReader(), Namespace: opts.Namespace, Port: opts.Port, MaxAge: interval / 2}
	r := idle.NewGPUPodReaper(mgr.GetClient(), mgr.GetAPIReader(), mgr.GetEventRecorder("gpuvc-idle"), src, idleOpts.Clock)
	return mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		r.Run(ctx, interval)
		return nil
	}))
}
