package nodeagent

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"

	"github.com/gpuvc/gpuvc/gpu/health"
	"github.com/gpuvc/gpuvc/gpu/inventory"
	"github.com/gpuvc/gpuvc/gpu/runtimeconfig"
	"github.com/gpuvc/gpuvc/gpu/usage"
)

// healthWatcher is NVML's event set on real GPUs, the injection file on
// simulated ones (none without InjectFailures: simulated GPUs never fail by
// themselves).
func (o Options) healthWatcher(inv inventory.Inventory) health.Watcher {
	if o.Simulated == nil {
		return health.NVML{Lib: nvml.New(), IgnoreXIDs: o.IgnoreXIDs}
	}
	if o.InjectFailures == "" {
		return nil
	}
	return health.Injected{Path: o.InjectFailures, Inventory: inv, IgnoreXIDs: o.IgnoreXIDs}
}

// startEvents starts the agent's event recorder (events.k8s.io, on its Node).
// The returned stop ends the broadcaster.
func startEvents(ctx context.Context, client kubernetes.Interface) (events.EventRecorder, func(), error) {
	b := events.NewBroadcaster(&events.EventSinkImpl{Interface: client.EventsV1()})
	if err := b.StartRecordingToSinkWithContext(ctx); err != nil {
		return nil, nil, err
	}
	return b.NewRecorder(scheme.Scheme, "gpuvc-agent"), b.Shutdown, nil
}

// startHealth builds the health side: events through rec, metrics on reg.
func startHealth(client kubernetes.Interface, node string, policy HealthPolicy, inv inventory.Inventory, reg prometheus.Registerer, rec events.EventRecorder) (*Health, error) {
	var uuids []string
	for _, g := range inv.GPUs {
		uuids = append(uuids, g.UUID)
	}
	m, err := NewHealthMetrics(reg, uuids)
	if err != nil {
		return nil, err
	}
	return &Health{Client: client, NodeName: node, Policy: policy, GPUs: len(inv.GPUs), Recorder: rec, Metrics: m, Devices: DevicesOf(inv)}, nil
}

// judge reads the toolkit's configuration and decides. With SimulatedToolkit
// the simulated node's hardened configuration (runtimeconfig.Simulated) is
// judged; otherwise the files ToolkitConfig names, so tests give a simulated
// node an unsafe one.
func (o Options) judge() func() runtimeconfig.Verdict {
	return func() runtimeconfig.Verdict {
		in := runtimeconfig.Input{DeviceListStrategy: o.DeviceListStrategy}
		if o.SimulatedToolkit {
			in.Files = []runtimeconfig.File{{Path: runtimeconfig.SimulatedPath, Data: []byte(runtimeconfig.Simulated)}}
		} else {
			in.Files = runtimeconfig.Read(o.HostRoot, o.ToolkitConfig)
		}
		return runtimeconfig.Judge(in)
	}
}

// runtimeCheck builds the runtime check: events through rec, metrics on reg,
// checked every Interval.
func (o Options) runtimeCheck(client kubernetes.Interface, reg prometheus.Registerer, rec events.EventRecorder) (*RuntimeCheck, error) {
	m, err := NewRuntimeMetrics(reg)
	if err != nil {
		return nil, err
	}
	return &RuntimeCheck{Client: client, NodeName: o.NodeName, Policy: o.Runtime, Judge: o.judge(),
		Recorder: rec, Metrics: m, Resync: o.Interval}, nil
}

// serveMetrics serves reg on addr until ctx ends.
func serveMetrics(ctx context.Context, addr string, reg *prometheus.Registry) error {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("--metrics-bind-address %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// utilizationReader is how the GPUs' utilization is read: NVML on real GPUs, the
// utilization file through a simulated NVML on simulated ones (nil without
// one: simulated GPUs then export no utilization).
func (o Options) utilizationReader(inv inventory.Inventory) func() ([]usage.Sample, error) {
	if o.Simulated == nil {
		lib := nvml.New()
		return func() ([]usage.Sample, error) { return usage.Read(lib) }
	}
	if o.SimulatedUtilization == "" {
		return nil
	}
	return usage.Simulated{Inventory: inv, Path: o.SimulatedUtilization}.Read
}

// registerUtilization exports per-pod GPU utilization: read at scrape time,
// device owners from the kubelet's pod-resources socket.
func registerUtilization(reg prometheus.Registerer, node, socket string, read func() ([]usage.Sample, error), log logr.Logger) (func() error, error) {
	client, closeConn, err := DialPodResources(socket)
	if err != nil {
		return nil, err
	}
	c := &UtilizationCollector{
		Node: node, Log: log,
		Read: read,
		Owners: func(ctx context.Context) (map[string]DeviceOwner, error) {
			return DeviceOwners(ctx, client)
		},
	}
	if err := reg.Register(c); err != nil {
		_ = closeConn()
		return nil, err
	}
	return closeConn, nil
}

// ServeUtilization serves the utilization metrics alone on addr until ctx
// ends, read by read and joined with the pods the kubelet's pod-resources
// socket names: for a node whose simulated GPUs another program serves (the
// local real node of a test process, kind/localnode), exactly as `gpuvc
// agent --simulate-utilization` exports them.
func ServeUtilization(ctx context.Context, addr, node, socket string, read func() ([]usage.Sample, error), log logr.Logger) error {
	reg := prometheus.NewRegistry()
	stop, err := registerUtilization(reg, node, socket, read, log)
	if err != nil {
		return err
	}
	defer stop()
	return serveMetrics(ctx, addr, reg)
}
