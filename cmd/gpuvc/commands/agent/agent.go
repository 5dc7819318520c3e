// Package agent implements `gpuvc agent`, the node inventory publisher.
package agent

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/klog/v2/textlogger"

	"github.com/gpuvc/gpuvc/api/contract"
	"github.com/gpuvc/gpuvc/cmd/gpuvc/commands/cli"
	"github.com/gpuvc/gpuvc/gpu/dra"
	"github.com/gpuvc/gpuvc/gpu/inventory"
	"github.com/gpuvc/gpuvc/gpu/nodeagent"
	"github.com/gpuvc/gpuvc/gpu/nodeagent/deviceplugin"
	"github.com/gpuvc/gpuvc/gpu/runtimeconfig"
)

// NodeNameEnv is where the node name comes from by default (downward API:
// spec.nodeName).
const NodeNameEnv = "NODE_NAME"

type flags struct {
	nodeName            string
	simulate            string
	migStrategy         string
	gfd                 string
	interval            time.Duration
	once                bool
	devicePlugin        bool
	devicePluginDir     string
	dra                 bool
	kubeletDir          string
	cdiDir              string
	verbosity           int
	gpuFailure          string
	gpuProbation        time.Duration
	gpuMaxFailures      int
	gpuNodeTaint        string
	injectFailures      string
	simulateUtilization string
	ignoreXIDs          string
	metricsAddr         string
	podResources        string
	gpuRuntime          string
	toolkitConfig       []string
	hostRoot            string
	deviceStrategy      string
}

// NewCommand returns the agent command. --node-name defaults to $NODE_NAME as
// it is when the command is built.
func NewCommand(streams cli.Streams, globals *cli.Globals) *cobra.Command {
	return newCommand(streams, globals, &flags{})
}

func newCommand(streams cli.Streams, globals *cli.Globals, f *flags) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "agent",
		Short: "Publish this node's GPU inventory on its Node: annotation gpuvc.dev/gpu-inventory and GFD-style labels",
		Long: "Publish this node's GPU inventory on its Node object: the JSON annotation\n" +
			"gpuvc.dev/gpu-inventory and, unless GPU Feature Discovery labels the node, the labels\n" +
			"GFD would set (nvidia.com/gpu.product, ...). GPUs are read with NVML, or simulated with\n" +
			"--simulate on nodes without GPUs; --device-plugin then also serves the simulated GPUs\n" +
			"to the kubelet as nvidia.com/gpu and nvidia.com/mig-<profile> (mixed strategy), and --dra\n" +
			"those the spec hands to DRA (dra=<n>) through a DRA kubelet plugin (ResourceSlices, CDI).\n" +
			"It also watches the GPUs' health (NVML events: critical XIDs, double-bit ECC, lost GPUs)\n" +
			"and, per --gpu-failure, takes a failed GPU out of service alone (device plugin, condition\n" +
			"GPUHealthy, annotations), drains the pods using it, returns it after --gpu-probation and\n" +
			"quarantines it for good after --gpu-max-failures; the node is tainted (and cordoned) when\n" +
			"every GPU is out (--gpu-failure-node-taint).\n" +
			"It judges the node's NVIDIA container toolkit configuration and, per --gpu-runtime, sets\n" +
			"the Node condition GPURuntimeSafe and taints a node whose runtime would give an\n" +
			"unprivileged container the GPUs it names in NVIDIA_VISIBLE_DEVICES.\n" +
			"Needs RBAC get and patch on nodes; with health watching or the runtime check also patch nodes/status and\n" +
			"create events; with cordon-drain also list pods and create pods/eviction (and the kubelet's\n" +
			"pod-resources socket, --pod-resources-socket, to find every pod on a failed GPU).",
		Example: "  gpuvc agent --node-name=$(NODE_NAME)\n" +
			"  gpuvc agent --simulate product=NVIDIA-A100-SXM4-80GB,count=8,mig=all-balanced --device-plugin\n" +
			"  gpuvc agent --simulate product=NVIDIA-A100-SXM4-80GB,count=8,dra=2 --device-plugin --dra",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return run(cmd.Context(), streams, globals, f, cmd.Flags())
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
	fs.BoolVar(&f.dra, "dra", false, "also serve the simulated GPUs the spec hands to DRA (--simulate ...,dra=<n>) through a DRA kubelet plugin: ResourceSlices of driver "+contract.DRADriver+", CDI specs that give a container its device's UUID")
	fs.StringVar(&f.kubeletDir, "kubelet-dir", dra.DefaultKubeletDir, "the kubelet's root folder (--root-dir): the DRA plugin registers in its plugins_registry")
	fs.StringVar(&f.cdiDir, "cdi-dir", dra.DefaultCDIDir, "a folder the container runtime reads CDI specs from (containerd: one of cdi_spec_dirs), where the DRA plugin writes them")
	fs.IntVar(&f.verbosity, "v", 0, "log verbosity")
	fs.StringVar(&f.gpuFailure, "gpu-failure", string(nodeagent.HealthTaint), "what to do when a GPU fails (critical XID, double-bit ECC, lost): report (condition GPUHealthy, annotation, events, metrics), taint (also taint gpuvc.dev/gpu-unhealthy:NoSchedule), cordon-drain (also cordon and evict the pods on the failed GPU) or off (no health watching)")
	fs.DurationVar(&f.gpuProbation, "gpu-probation", 10*time.Minute, "how long a failed GPU stays out of service with no new error before it returns by itself (device plugin Healthy again, condition and annotations updated); 0: never by itself, only when an operator clears it (annotation "+contract.AnnotationGPUQuarantineClear+")")
	fs.IntVar(&f.gpuMaxFailures, "gpu-max-failures", 3, "the failure that takes a GPU out for this many times quarantines it for good, until an operator clears it (annotation "+contract.AnnotationGPUQuarantineClear+"=<uuid>|all); 0: never")
	fs.StringVar(&f.gpuNodeTaint, "gpu-failure-node-taint", string(nodeagent.NodeTaintAllOut), "with --gpu-failure taint or cordon-drain, when the node is tainted (and cordoned): all (only when every GPU is out: the node keeps serving its healthy GPUs) or any (as soon as one is)")
	fs.StringVar(&f.injectFailures, "inject-gpu-failures", "", "with --simulate: a file whose lines inject failures of simulated GPUs: \"<gpu index or UUID> xid=<n>|ecc|lost\"")
	fs.StringVar(&f.ignoreXIDs, "ignore-xids", "", "comma-separated XIDs not to treat as GPU failures, besides the application XIDs always ignored (13, 31, 43, 45, 68, 109)")
	fs.StringVar(&f.podResources, "pod-resources-socket", nodeagent.DefaultPodResourcesSocket, "the kubelet's pod-resources socket: maps GPUs to pods for gpuvc_team_gpu_utilization (real GPUs, or simulated ones with --simulate-utilization; with --metrics-bind-address)")
	fs.StringVar(&f.simulateUtilization, "simulate-utilization", "", "with --simulate and --metrics-bind-address: a file whose lines set the simulated GPUs' utilization, \"<gpu index or UUID> <percent>\", read at every scrape; exported as gpuvc_team_gpu_utilization with the pods the kubelet's pod-resources socket names (GPUs not named report none)")
	fs.StringVar(&f.gpuRuntime, "gpu-runtime", string(nodeagent.RuntimeFence), "what to do when the node's NVIDIA container toolkit would honour NVIDIA_VISIBLE_DEVICES from an unprivileged container (a pod without a GPU request could name every GPU): fence (condition GPURuntimeSafe=False, event, metric, taint "+contract.TaintGPURuntimeUnsafe+":NoSchedule), warn (the same without the taint) or off")
	fs.StringSliceVar(&f.toolkitConfig, "nvidia-toolkit-config", runtimeconfig.DefaultPaths, "the node's NVIDIA container toolkit config.toml files to judge (every one found must set accept-nvidia-visible-devices-envvar-when-unprivileged = false; none found is unsafe); with --simulate and this flag unset, the simulated node's hardened configuration")
	fs.StringVar(&f.hostRoot, "host-root", "", "where the node's file system (the folders of --nvidia-toolkit-config) is mounted in the agent's container")
	fs.StringVar(&f.deviceStrategy, "device-list-strategy", "", "the device plugin's DEVICE_LIST_STRATEGY (envvar, volume-mounts, cdi-annotations, cdi-cri; comma-separated), if known: warns when GPU pods would get no GPU")
	fs.StringVar(&f.metricsAddr, "metrics-bind-address", "0", `address of the Prometheus metrics endpoint (/metrics; "0" disables it)`)
	return cmd
}

// healthOff turns GPU health watching off (--gpu-failure=off); runtimeOff the
// container-runtime check (--gpu-runtime=off).
const (
	healthOff  = "off"
	runtimeOff = "off"
)

// options checks every flag before anything talks to NVML or the API server
// and turns them into the agent's options; fs says which flags were given.
func (f *flags) options(fs *pflag.FlagSet) (nodeagent.Options, error) {
	o := nodeagent.Options{
		NodeName: f.nodeName, Interval: f.interval, Once: f.once,
		DevicePlugin: f.devicePlugin, DevicePluginDir: f.devicePluginDir,
		DRA: f.dra, KubeletDir: f.kubeletDir, CDIDir: f.cdiDir,
		InjectFailures: f.injectFailures, PodResourcesSocket: f.podResources,
		SimulatedUtilization: f.simulateUtilization,
		ToolkitConfig:        f.toolkitConfig, HostRoot: f.hostRoot, DeviceListStrategy: f.deviceStrategy,
		// A simulated node without --nvidia-toolkit-config has the hardened
		// configuration; with it, the files it names are judged.
		SimulatedToolkit: f.simulate != "" && !fs.Changed("nvidia-toolkit-config"),
	}
	if f.metricsAddr != "0" {
		o.MetricsAddr = f.metricsAddr
	}
	if f.nodeName == "" {
		return o, fmt.Errorf("no node name: set --node-name or $%s (downward API: spec.nodeName)", NodeNameEnv)
	}
	switch s := inventory.Strategy(f.migStrategy); s {
	case inventory.StrategyNone, inventory.StrategySingle, inventory.StrategyMixed:
		o.Strategy = s
	default:
		return o, fmt.Errorf("--mig-strategy %q is not one of none, single, mixed", f.migStrategy)
	}
	var err error
	if o.GFD, err = nodeagent.ParseGFDMode(f.gfd); err != nil {
		return o, fmt.Errorf("--gfd: %w", err)
	}
	if f.interval <= 0 {
		return o, fmt.Errorf("--interval %v must be positive", f.interval)
	}
	if f.devicePlugin && f.simulate == "" {
		return o, errors.New("--device-plugin serves simulated GPUs only: add --simulate (real GPUs need NVIDIA's device plugin)")
	}
	if f.devicePlugin && o.Strategy != inventory.StrategyMixed {
		return o, fmt.Errorf("--device-plugin advertises MIG devices with the mixed strategy: --mig-strategy %s would label the node differently", o.Strategy)
	}
	if f.gpuFailure != healthOff {
		if o.Health, err = nodeagent.ParseHealthPolicy(f.gpuFailure); err != nil {
			return o, fmt.Errorf("--gpu-failure: %w (or off)", err)
		}
	}
	if f.gpuProbation < 0 {
		return o, fmt.Errorf("--gpu-probation %v must not be negative (0: a failed GPU returns only when an operator clears it)", f.gpuProbation)
	}
	if f.gpuMaxFailures < 0 {
		return o, fmt.Errorf("--gpu-max-failures %d must not be negative (0: never quarantine for good)", f.gpuMaxFailures)
	}
	o.Quarantine = nodeagent.QuarantinePolicy{Probation: f.gpuProbation, MaxFailures: f.gpuMaxFailures}
	if o.NodeTaint, err = nodeagent.ParseNodeTaintMode(f.gpuNodeTaint); err != nil {
		return o, fmt.Errorf("--gpu-failure-node-taint: %w", err)
	}
	if f.gpuRuntime != runtimeOff {
		if o.Runtime, err = nodeagent.ParseRuntimePolicy(f.gpuRuntime); err != nil {
			return o, fmt.Errorf("--gpu-runtime: %w (or off)", err)
		}
	}
	if o.IgnoreXIDs, err = parseXIDs(f.ignoreXIDs); err != nil {
		return o, err
	}
	if f.injectFailures != "" && (f.simulate == "" || o.Health == "") {
		return o, errors.New("--inject-gpu-failures fails simulated GPUs only: it needs --simulate and a --gpu-failure other than off")
	}
	if f.simulateUtilization != "" && (f.simulate == "" || o.MetricsAddr == "") {
		return o, errors.New("--simulate-utilization drives simulated GPUs' utilization metrics only: it needs --simulate and --metrics-bind-address")
	}
	if f.devicePlugin && f.once {
		return o, errors.New("--device-plugin must keep running for the kubelet: drop --once")
	}
	if f.dra && f.once {
		return o, errors.New("--dra must keep running for the kubelet: drop --once")
	}
	if f.dra && f.simulate == "" {
		return o, errors.New("--dra serves simulated GPUs only: add --simulate ...,dra=<n> (real GPUs need NVIDIA's DRA driver)")
	}
	if f.simulate == "" {
		return o, nil
	}
	spec, err := nodeagent.ParseSpec(f.simulate)
	if err != nil {
		return o, fmt.Errorf("--simulate %q: %w", f.simulate, err)
	}
	if f.dra && spec.DRA == 0 {
		return o, fmt.Errorf("--dra: --simulate %q hands no GPU to DRA: add dra=<n> (the last n of the %d GPUs)", f.simulate, spec.Count)
	}
	if f.devicePlugin && spec.DRA == spec.Count {
		return o, fmt.Errorf("--device-plugin: --simulate %q hands every GPU to DRA (dra=%d): drop --device-plugin or lower dra", f.simulate, spec.DRA)
	}
	o.Simulated = &spec
	return o, nil
}

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

func run(ctx context.Context, streams cli.Streams, globals *cli.Globals, f *flags, fs *pflag.FlagSet) error {
	o, err := f.options(fs)
	if err != nil {
		return err
	}
	o.Out, o.RESTConfig = streams.Out, globals.RESTConfig
	ctx = logr.NewContext(ctx, textlogger.NewLogger(textlogger.NewConfig(textlogger.Output(streams.ErrOut), textlogger.Verbosity(f.verbosity))))
	if !o.Once {
		var stop context.CancelFunc
		ctx, stop = signal.NotifyContext(ctx, syscall.SIGTERM, os.Interrupt)
		defer stop()
	}
	return nodeagent.Run(ctx, o)
}
