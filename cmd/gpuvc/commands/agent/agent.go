// Package agent implements `gpuvc agent`, the node inventory publisher.
package agent

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/cobra"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2/textlogger"

	"github.com/gpuvc/gpuvc/api/contract"
	"github.com/gpuvc/gpuvc/cmd/gpuvc/commands/cli"
	"github.com/gpuvc/gpuvc/gpu/inventory"
	"github.com/gpuvc/gpuvc/gpu/nodeagent"
	"github.com/gpuvc/gpuvc/gpu/nodeagent/deviceplugin"
	"github.com/gpuvc/gpuvc/gpu/runtimeconfig"
)

// NodeNameEnv is where the node name comes from by default (downward API:
// spec.nodeName).
const NodeNameEnv = "NODE_NAME"

type flags struct {
	nodeName        string
	simulate        string
	migStrategy     string
	gfd             string
	interval        time.Duration
	once            bool
	devicePlugin    bool
	devicePluginDir string
	verbosity       int
	gpuFailure      string
	injectFailures  string
	ignoreXIDs      string
	metricsAddr     string
	podResources    string
	gpuRuntime      string
	toolkitConfig   []string
	hostRoot        string
	deviceStrategy  string
	// toolkitConfigSet: --nvidia-toolkit-config was given (a simulated node
	// then judges those files instead of its hardened default).
	toolkitConfigSet bool
}

// NewCommand returns the agent command. --node-name defaults to $NODE_NAME as
// it is when the command is built.
func NewCommand(streams cli.Streams, globals *cli.Globals) *cobra.Command {
	f := &flags{}
	cmd := &cobra.Command{
		Use:   "agent",
		Short: "Publish this node's GPU inventory on its Node: annotation gpuvc.dev/gpu-inventory and GFD-style labels",
		Long: "Publish this node's GPU inventory on its Node object: the JSON annotation\n" +
			"gpuvc.dev/gpu-inventory and, unless GPU Feature Discovery labels the node, the labels\n" +
			"GFD would set (nvidia.com/gpu.product, ...). GPUs are read with NVML, or simulated with\n" +
			"--simulate on nodes without GPUs; --device-plugin then also serves the simulated GPUs\n" +
			"to the kubelet as nvidia.com/gpu and nvidia.com/mig-<profile> (mixed strategy).\n" +
			"It also watches the GPUs' health (NVML events: critical XIDs, double-bit ECC, lost GPUs)\n" +
			"and, per --gpu-failure, sets the Node condition GPUHealthy, taints, cordons and drains.\n" +
			"It judges the node's NVIDIA container toolkit configuration and, per --gpu-runtime, sets\n" +
			"the Node condition GPURuntimeSafe and taints a node whose runtime would give an\n" +
			"unprivileged container the GPUs it names in NVIDIA_VISIBLE_DEVICES.\n" +
			"Needs RBAC get and patch on nodes; with health watching or the runtime check also patch nodes/status and\n" +
			"create events; with cordon-drain also list pods and create pods/eviction.",
		Example: "  gpuvc agent --node-name=$(NODE_NAME)\n" +
			"  gpuvc agent --simulate product=NVIDIA-A100-SXM4-80GB,count=8,mig=all-balanced --device-plugin",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f.toolkitConfigSet = cmd.Flags().Changed("nvidia-toolkit-config")
			return run(cmd.Context(), streams, globals, f)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&f.nodeName, "node-name", os.Getenv(NodeNameEnv), "the Node this agent runs on (default $"+NodeNameEnv+", from the downward API's spec.nodeName)")
	fs.StringVar(&f.simulate, "simulate", "", "simulate GPUs instead of reading NVML: product=<name>,count=<n>[,mig=<layout>[;<layout per GPU>...]][,memory=<MiB>][,seed=<s>] (seed defaults to the node name)")
	fs.StringVar(&f.migStrategy, "mig-strategy", string(inventory.StrategyMixed), "MIG strategy of the published labels: none, single or mixed")
	fs.StringVar(&f.gfd, "gfd", string(nodeagent.GFDAuto), "is GPU Feature Discovery labelling the node: auto (detect), present (write no nvidia.com/ labels) or absent")
	fs.DurationVar(&f.interval, "interval", time.Minute, "time between two publications")
	fs.BoolVar(&f.once, "once", false, "publish once, print the result and exit")
	fs.BoolVar(&f.devicePlugin, "device-plugin", false, "also serve the simulated GPUs to the kubelet through the device-plugin API (needs --simulate)")
	fs.StringVar(&f.devicePluginDir, "device-plugin-dir", deviceplugin.DefaultDir, "the kubelet's device-plugin folder (holds kubelet.sock)")
	fs.IntVar(&f.verbosity, "v", 0, "log verbosity")
	fs.StringVar(&f.gpuFailure, "gpu-failure", string(nodeagent.HealthTaint), "what to do when a GPU fails (critical XID, double-bit ECC, lost): report (condition GPUHealthy, annotation, events, metrics), taint (also taint gpuvc.dev/gpu-unhealthy:NoSchedule), cordon-drain (also cordon and evict the pods on the failed GPU) or off (no health watching)")
	fs.StringVar(&f.injectFailures, "inject-gpu-failures", "", "with --simulate: a file whose lines inject failures of simulated GPUs: \"<gpu index or UUID> xid=<n>|ecc|lost\"")
	fs.StringVar(&f.ignoreXIDs, "ignore-xids", "", "comma-separated XIDs not to treat as GPU failures, besides the application XIDs always ignored (13, 31, 43, 45, 68, 109)")
	fs.StringVar(&f.podResources, "pod-resources-socket", nodeagent.DefaultPodResourcesSocket, "the kubelet's pod-resources socket: maps GPUs to pods for gpuvc_team_gpu_utilization (real GPUs, with --metrics-bind-address)")
	fs.StringVar(&f.gpuRuntime, "gpu-runtime", string(nodeagent.RuntimeFence), "what to do when the node's NVIDIA container toolkit would honour NVIDIA_VISIBLE_DEVICES from an unprivileged container (a pod without a GPU request could name every GPU): fence (condition GPURuntimeSafe=False, event, metric, taint "+contract.TaintGPURuntimeUnsafe+":NoSchedule), warn (the same without the taint) or off")
	fs.StringSliceVar(&f.toolkitConfig, "nvidia-toolkit-config", runtimeconfig.DefaultPaths, "the node's NVIDIA container toolkit config.toml files to judge (every one found must set accept-nvidia-visible-devices-envvar-when-unprivileged = false; none found is unsafe); with --simulate and this flag unset, the simulated node's hardened configuration")
	fs.StringVar(&f.hostRoot, "host-root", "", "where the node's file system (the folders of --nvidia-toolkit-config) is mounted in the agent's container")
	fs.StringVar(&f.deviceStrategy, "device-list-strategy", "", "the device plugin's DEVICE_LIST_STRATEGY (envvar, volume-mounts, cdi-annotations, cdi-cri; comma-separated), if known: warns when GPU pods would get no GPU")
	fs.StringVar(&f.metricsAddr, "metrics-bind-address", "0", `address of the Prometheus metrics endpoint (/metrics; "0" disables it)`)
	return cmd
}

// config is what the flags resolve to.
type config struct {
	source   inventory.Source
	spec     *inventory.Spec // set with --simulate
	strategy inventory.Strategy
	gfd      nodeagent.GFDMode
	health   nodeagent.HealthPolicy  // "" with --gpu-failure=off
	runtime  nodeagent.RuntimePolicy // "" with --gpu-runtime=off
	ignore   []uint64
}

// validate checks every flag before anything talks to NVML or the API server.
func (f *flags) validate() (config, error) {
	var c config
	if f.nodeName == "" {
		return c, fmt.Errorf("no node name: set --node-name or $%s (downward API: spec.nodeName)", NodeNameEnv)
	}
	switch s := inventory.Strategy(f.migStrategy); s {
	case inventory.StrategyNone, inventory.StrategySingle, inventory.StrategyMixed:
		c.strategy = s
	default:
		return c, fmt.Errorf("--mig-strategy %q is not one of none, single, mixed", f.migStrategy)
	}
	var err error
	if c.gfd, err = nodeagent.ParseGFDMode(f.gfd); err != nil {
		return c, fmt.Errorf("--gfd: %w", err)
	}
	if f.interval <= 0 {
		return c, fmt.Errorf("--interval %v must be positive", f.interval)
	}
	if f.devicePlugin && f.simulate == "" {
		return c, errors.New("--device-plugin serves simulated GPUs only: add --simulate (real GPUs need NVIDIA's device plugin)")
	}
	if f.devicePlugin && c.strategy != inventory.StrategyMixed {
		return c, fmt.Errorf("--device-plugin advertises MIG devices with the mixed strategy: --mig-strategy %s would label the node differently", c.strategy)
	}
	if f.gpuFailure != healthOff {
		if c.health, err = nodeagent.ParseHealthPolicy(f.gpuFailure); err != nil {
			return c, fmt.Errorf("--gpu-failure: %w (or off)", err)
		}
	}
	if f.gpuRuntime != runtimeOff {
		if c.runtime, err = nodeagent.ParseRuntimePolicy(f.gpuRuntime); err != nil {
			return c, fmt.Errorf("--gpu-runtime: %w (or off)", err)
		}
	}
	if c.ignore, err = parseXIDs(f.ignoreXIDs); err != nil {
		return c, err
	}
	if f.injectFailures != "" && (f.simulate == "" || c.health == "") {
		return c, errors.New("--inject-gpu-failures fails simulated GPUs only: it needs --simulate and a --gpu-failure other than off")
	}
	if f.devicePlugin && f.once {
		return c, errors.New("--device-plugin must keep running for the kubelet: drop --once")
	}
	if f.simulate == "" {
		c.source = inventory.NVML{Lib: nvml.New()}
		return c, nil
	}
	spec, err := nodeagent.ParseSpec(f.simulate)
	if err != nil {
		return c, fmt.Errorf("--simulate %q: %w", f.simulate, err)
	}
	if spec.Seed == "" {
		spec.Seed = f.nodeName
	}
	c.spec, c.source = &spec, spec
	return c, nil
}

func run(ctx context.Context, streams cli.Streams, globals *cli.Globals, f *flags) error {
	c, err := f.validate()
	if err != nil {
		return err
	}
	// Local problems (no driver) first, before the API server configuration.
	inv, err := c.source.Inventory()
	if err != nil {
		return hint(fmt.Errorf("reading the GPUs of node %q: %w", f.nodeName, err))
	}
	cfg, err := globals.RESTConfig()
	if err != nil {
		return fmt.Errorf("API server configuration (kubeconfig or in-cluster): %w", err)
	}
	cfg.UserAgent = "gpuvc-agent"
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	log := textlogger.NewLogger(textlogger.NewConfig(textlogger.Output(streams.ErrOut), textlogger.Verbosity(f.verbosity)))
	ctx = logr.NewContext(ctx, log)
	agent := nodeagent.Agent{
		Source:    c.source,
		Publisher: nodeagent.Publisher{Client: client, NodeName: f.nodeName, Strategy: c.strategy, GFD: c.gfd},
		Interval:  f.interval,
	}
	if f.once {
		res, err := agent.Once(ctx)
		if err != nil {
			return hint(err)
		}
		_, err = fmt.Fprintln(streams.Out, res)
		return err
	}

	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, os.Interrupt)
	defer stop()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var tasks []func() error
	tasks = append(tasks, func() error { return hint(agent.Run(ctx)) })

	var plugin *deviceplugin.Health
	if f.devicePlugin {
		plugin = deviceplugin.NewHealth(inv)
		tasks = append(tasks, func() error {
			err := deviceplugin.Serve(ctx, deviceplugin.Options{Dir: f.devicePluginDir, Inventory: inv, Health: plugin})
			if err != nil {
				err = fmt.Errorf("device plugin: %w", err)
			}
			return err
		})
	}
	reg := prometheus.NewRegistry()
	w := f.healthWatcher(inv, c.ignore)
	var rec events.EventRecorder
	if (c.health != "" && w != nil) || c.runtime != "" {
		var stopEvents func()
		if rec, stopEvents, err = startEvents(ctx, client); err != nil {
			return err
		}
		defer stopEvents()
	}
	if c.runtime != "" {
		check, err := f.runtimeCheck(client, c.runtime, reg, rec, f.simulate != "" && !f.toolkitConfigSet)
		if err != nil {
			return err
		}
		tasks = append(tasks, func() error { return check.Run(ctx) })
	}
	if c.health != "" && w != nil {
		h, err := startHealth(client, f.nodeName, c.health, inv, reg, rec)
		if err != nil {
			return err
		}
		if plugin != nil {
			h.OnUnhealthy = plugin.SetUnhealthy
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
	if f.metricsAddr != "0" && f.metricsAddr != "" {
		if f.simulate == "" {
			stopUtil, err := registerUtilization(reg, f.nodeName, f.podResources, log)
			if err != nil {
				return err
			}
			defer stopUtil()
		}
		tasks = append(tasks, func() error { return serveMetrics(ctx, f.metricsAddr, reg) })
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
