package agent

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
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
	"github.com/gpuvc/gpuvc/gpu/nodeagent"
	"github.com/gpuvc/gpuvc/gpu/usage"
)

// healthOff turns GPU health watching off (--gpu-failure=off).
const healthOff = "off"

// parseXIDs reads --ignore-xids: comma-separated numbers.
func parseXIDs(s string) ([]uint64, error) {
	var out []uint64
	for _, part := range strings.Split(s, ",") {
		if part = strings.TrimSpace(part); part == "" {
			continue
		}
		x, err := strconv.ParseUint(part, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("--ignore-xids: %q is not an XID number", part)
		}
		out = append(out, x)
	}
	return out, nil
}

// healthWatcher is NVML's event set on real GPUs, the injection file on
// simulated ones (none without --inject-gpu-failures: simulated GPUs never
// fail by themselves).
func (f *flags) healthWatcher(inv inventory.Inventory, ignore []uint64) health.Watcher {
	if f.simulate == "" {
		return health.NVML{Lib: nvml.New(), IgnoreXIDs: ignore}
	}
	if f.injectFailures == "" {
		return nil
	}
	return health.Injected{Path: f.injectFailures, Inventory: inv, IgnoreXIDs: ignore}
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
func startHealth(client kubernetes.Interface, node string, policy nodeagent.HealthPolicy, inv inventory.Inventory, reg prometheus.Registerer, rec events.EventRecorder) (*nodeagent.Health, error) {
	var uuids []string
	for _, g := range inv.GPUs {
		uuids = append(uuids, g.UUID)
	}
	m, err := nodeagent.NewHealthMetrics(reg, uuids)
	if err != nil {
		return nil, err
	}
	return &nodeagent.Health{Client: client, NodeName: node, Policy: policy, GPUs: len(inv.GPUs), Recorder: rec, Metrics: m}, nil
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

// registerUtilization exports per-pod GPU utilization on real GPUs: NVML at
// scrape time, device owners from the kubelet's pod-resources socket.
func registerUtilization(reg prometheus.Registerer, node, socket string, log logr.Logger) (func() error, error) {
	client, closeConn, err := nodeagent.DialPodResources(socket)
	if err != nil {
		return nil, err
	}
	lib := nvml.New()
	c := &nodeagent.UtilizationCollector{
		Node: node, Log: log,
		Read: func() ([]usage.Sample, error) { return usage.Read(lib) },
		Owners: func(ctx context.Context) (map[string]nodeagent.DeviceOwner, error) {
			return nodeagent.DeviceOwners(ctx, client)
		},
	}
	if err := reg.Register(c); err != nil {
		_ = closeConn()
		return nil, err
	}
	return closeConn, nil
}
