package manager

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/gpuvc/gpuvc/manager/agentmetrics"
	"github.com/gpuvc/gpuvc/manager/idle"
)

// AgentMetrics says where the node agents (`gpuvc agent --metrics-bind-address`)
// serve /metrics.
type AgentMetrics struct {
	// Port of the agent pods' metrics endpoint; 0 scrapes no agent pod.
	Port int
	// Namespace of the agent pods (the chart's release namespace).
	Namespace string
	// Addresses are agents that do not run as pods, host:port
	// (--agent-metrics-address): a node's own `gpuvc agent` daemon, as on the
	// local stack's real node. With neither a Port nor an address
	// spec.idle.gpuPods is left unapplied.
	Addresses []string
}

// addGPUPodReaper runs the idle GPU-pod policy on the leader (a RunnableFunc
// needs leader election) when the agents' metrics are on, every idleOpts.Interval
// and on idleOpts.Clock (the idle policy's clock, which tests set). Each look
// scrapes every agent once.
func addGPUPodReaper(mgr ctrl.Manager, opts AgentMetrics, idleOpts idle.Options) error {
	if opts.Port == 0 && len(opts.Addresses) == 0 {
		return nil
	}
	if opts.Port < 0 || opts.Port > 65535 {
		return fmt.Errorf("--agent-metrics-port %d: not a TCP port (1-65535, or 0 to leave spec.idle.gpuPods unapplied)", opts.Port)
	}
	if opts.Port != 0 && opts.Namespace == "" {
		return fmt.Errorf("--agent-metrics-port %d set but the agents' namespace is empty: pass --agent-namespace (in a pod it defaults to $POD_NAMESPACE)", opts.Port)
	}
	for _, a := range opts.Addresses {
		if err := checkAddress(a); err != nil {
			return err
		}
	}
	interval := idleOpts.Interval
	if interval <= 0 {
		interval = 30 * time.Second
	}
	src := &agentmetrics.Source{Reader: mgr.GetAPIReader(), Namespace: opts.Namespace, Port: opts.Port, Addresses: opts.Addresses, MaxAge: interval / 2}
	r := idle.NewGPUPodReaper(mgr.GetClient(), mgr.GetAPIReader(), mgr.GetEventRecorder("gpuvc-idle"), src, idleOpts.Clock)
	return mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		r.Run(ctx, interval)
		return nil
	}))
}

// checkAddress: an agent address is host:port with a TCP port.
func checkAddress(a string) error {
	host, port, err := net.SplitHostPort(a)
	n, perr := strconv.Atoi(port)
	if err != nil || host == "" || perr != nil || n < 1 || n > 65535 {
		return fmt.Errorf("--agent-metrics-address %q: not host:port with a TCP port (1-65535), e.g. 10.0.0.7:9402", a)
	}
	return nil
}
