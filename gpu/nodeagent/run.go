package nodeagent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"

	"github.com/gpuvc/gpuvc/api/contract"
	"github.com/gpuvc/gpuvc/gpu/dra"
	"github.com/gpuvc/gpuvc/gpu/inventory"
	"github.com/gpuvc/gpuvc/gpu/nodeagent/deviceplugin"
)

// Options are the settings of `gpuvc agent` (the flag each comes from in
// brackets). Run does not check their combinations: the command does, and
// names the flags.
type Options struct {
	// NodeName is the Node the agent runs on (--node-name).
	NodeName string
	// Simulated are the GPUs to simulate (--simulate); nil reads the node's
	// GPUs with NVML. Without a seed they are seeded with NodeName.
	Simulated *inventory.Spec
	// Strategy is the MIG strategy of the published labels (--mig-strategy).
	Strategy inventory.Strategy
	// GFD says whether GPU Feature Discovery labels the node (--gfd).
	GFD GFDMode
	// Interval is the time between two publications and two runtime checks
	// (--interval); positive.
	Interval time.Duration
	// Once publishes once, prints the result to Out and returns (--once).
	Once bool
	// Out receives the result of Once.
	Out io.Writer
	// DevicePlugin also serves the simulated GPUs to the kubelet
	// (--device-plugin), through DevicePluginDir (--device-plugin-dir).
	DevicePlugin    bool
	DevicePluginDir string
	// DRA also serves the simulated GPUs marked for DRA (the spec's dra=<n>)
	// through the DRA kubelet plugin of gpu/dra (--dra): registered in the
	// kubelet's root folder KubeletDir (--kubelet-dir), CDI specs written to
	// CDIDir (--cdi-dir).
	DRA        bool
	KubeletDir string
	CDIDir     string
	// Health is what to do when a GPU fails (--gpu-failure); "" watches no
	// GPU health.
	Health HealthPolicy
	// InjectFailures is the file injecting failures of simulated GPUs
	// (--inject-gpu-failures); simulated GPUs never fail without it.
	InjectFailures string
	// Quarantine is how long a failed GPU stays out (--gpu-probation,
	// --gpu-max-failures).
	Quarantine QuarantinePolicy
	// NodeTaint is when the taint policies taint the node
	// (--gpu-failure-node-taint); "" is NodeTaintAllOut.
	NodeTaint NodeTaintMode
	// IgnoreXIDs are XIDs not treated as GPU failures besides the
	// application XIDs always ignored (--ignore-xids).
	IgnoreXIDs []uint64
	// Runtime is what to do about a container runtime that honours
	// NVIDIA_VISIBLE_DEVICES from unprivileged containers (--gpu-runtime); ""
	// runs no runtime check.
	Runtime RuntimePolicy
	// ToolkitConfig are the NVIDIA container toolkit config.toml files the
	// runtime check judges (--nvidia-toolkit-config), read under HostRoot
	// (--host-root).
	ToolkitConfig []string
	HostRoot      string
	// SimulatedToolkit judges the simulated node's hardened toolkit
	// configuration (runtimeconfig.Simulated) instead of ToolkitConfig: a
	// simulated node without --nvidia-toolkit-config.
	SimulatedToolkit bool
	// DeviceListStrategy is the device plugin's DEVICE_LIST_STRATEGY, if
	// known (--device-list-strategy).
	DeviceListStrategy string
	// MetricsAddr is where /metrics is served (--metrics-bind-address); ""
	// serves none.
	MetricsAddr string
	// PodResourcesSocket is the kubelet's pod-resources socket
	// (--pod-resources-socket): the owners of the GPUs for the utilization
	// metrics, and of every device for the drain of a failed GPU.
	PodResourcesSocket string
	// SimulatedUtilization is the file that sets simulated GPUs' utilization
	// (--simulate-utilization, usage.Simulated); with MetricsAddr the agent
	// then exports it with the pods holding each GPU, as on real GPUs. ""
	// exports no utilization of simulated GPUs.
	SimulatedUtilization string
	// RESTConfig gives the API server's configuration. Run calls it after
	// reading the GPUs, so that a local problem (no driver) is reported
	// first.
	RESTConfig func() (*rest.Config, error)
}

// Run is `gpuvc agent`: it reads the node's GPUs and publishes them on its
// Node every Interval, and, as the options say, serves the simulated device
// plugin and the DRA kubelet plugin, watches the GPUs' health, checks the container runtime and serves
// /metrics, until ctx ends (then it returns nil) or one of them fails (then
// it stops the others and returns the errors). With Once it publishes once.
// It logs to the logger from ctx.
func Run(ctx context.Context, o Options) error {
	source := inventory.Source(inventory.NVML{Lib: nvml.New()})
	if o.Simulated != nil {
		spec := *o.Simulated
		if spec.Seed == "" {
			spec.Seed = o.NodeName
		}
		source = spec
	}
	// Local problems (no driver) first, before the API server configuration.
	inv, err := source.Inventory()
	if err != nil {
		return hint(fmt.Errorf("reading the GPUs of node %q: %w", o.NodeName, err))
	}
	cfg, err := o.RESTConfig()
	if err != nil {
		return fmt.Errorf("API server configuration (kubeconfig or in-cluster): %w", err)
	}
	cfg.UserAgent = "gpuvc-agent"
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	log := logr.FromContextOrDiscard(ctx)
	agent := Agent{
		Source:    source,
		Publisher: Publisher{Client: client, NodeName: o.NodeName, Strategy: o.Strategy, GFD: o.GFD},
		Interval:  o.Interval,
	}
	if o.Once {
		res, err := agent.Once(ctx)
		if err != nil {
			return hint(err)
		}
		_, err = fmt.Fprintln(o.Out, res)
		return err
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var tasks []func() error
	tasks = append(tasks, func() error { return hint(agent.Run(ctx)) })

	var plugin *deviceplugin.Health
	if o.DevicePlugin {
		plugin = deviceplugin.NewHealth(inv)
		tasks = append(tasks, func() error {
			err := deviceplugin.Serve(ctx, deviceplugin.Options{Dir: o.DevicePluginDir, Inventory: inv, Health: plugin})
			if err != nil {
				err = fmt.Errorf("device plugin: %w", err)
			}
			return err
		})
	}
	if o.DRA {
		tasks = append(tasks, func() error {
			err := dra.Serve(ctx, dra.Options{NodeName: o.NodeName, Client: client, Inventory: inv, KubeletDir: o.KubeletDir, CDIDir: o.CDIDir})
			if err != nil {
				err = fmt.Errorf("DRA kubelet plugin: %w", err)
			}
			return err
		})
	}
	reg := prometheus.NewRegistry()
	w := o.healthWatcher(inv)
	var rec events.EventRecorder
	if (o.Health != "" && w != nil) || o.Runtime != "" {
		var stopEvents func()
		if rec, stopEvents, err = startEvents(ctx, client); err != nil {
			return err
		}
		defer stopEvents()
	}
	if o.Runtime != "" {
		check, err := o.runtimeCheck(client, reg, rec)
		if err != nil {
			return err
		}
		tasks = append(tasks, func() error { return check.Run(ctx) })
	}
	if o.Health != "" && w != nil {
		h, err := startHealth(client, o.NodeName, o.Health, inv, reg, rec)
		if err != nil {
			return err
		}
		h.Quarantine, h.NodeTaint = o.Quarantine, o.NodeTaint
		// An operator's clear (annotation) is read at the next enforcement.
		h.Resync = min(o.Interval, 30*time.Second)
		if plugin != nil {
			h.OnUnhealthy, h.OnHealthy = plugin.SetUnhealthy, plugin.SetHealthy
		}
		if _, err := os.Stat(o.PodResourcesSocket); o.Health == HealthCordonDrain && err != nil {
			log.Info("no kubelet pod-resources socket: a failed GPU's drain finds only the pods annotated "+contract.AnnotationGPUUUID+" (reservations and shares), not whole-GPU or MIG pods",
				"socket", o.PodResourcesSocket, "error", err.Error())
		} else if o.Health == HealthCordonDrain {
			owners, closeOwners, err := DialPodResources(o.PodResourcesSocket)
			if err != nil {
				return err
			}
			defer closeOwners()
			h.Owners = func(ctx context.Context) (map[string]DeviceOwner, error) { return DeviceOwners(ctx, owners) }
		}
		tasks = append(tasks, func() error {
			// A watch that cannot run (a driver without events) must not end
			// the inventory publication: say so and keep publishing.
			if err := h.Run(ctx, w); err != nil {
				log.Error(err, "GPU health is not watched on this node")
				<-ctx.Done()
			}
			return nil
		})
	}
	if o.MetricsAddr != "" {
		if read := o.utilizationReader(inv); read != nil {
			stopUtil, err := registerUtilization(reg, o.NodeName, o.PodResourcesSocket, read, log)
			if err != nil {
				return err
			}
			defer stopUtil()
		}
		tasks = append(tasks, func() error { return serveMetrics(ctx, o.MetricsAddr, reg) })
	}
	errs := make(chan error, len(tasks))
	for _, task := range tasks {
		go func() { errs <- task() }()
	}
	first := <-errs // the first to end (an error, or nil once ctx ended) ends all
	cancel()
	all := []error{first}
	for range len(tasks) - 1 {
		all = append(all, <-errs)
	}
	return errors.Join(all...)
}

// hint adds what to do about a missing driver.
func hint(err error) error {
	if errors.Is(err, inventory.ErrNoDriver) {
		return fmt.Errorf("%w; on a node without NVIDIA GPUs (kind, kwok) simulate them with --simulate product=<GFD product>,count=<n>[,mig=<layout>]", err)
	}
	return err
}
