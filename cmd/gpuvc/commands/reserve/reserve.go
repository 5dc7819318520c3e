// Package reserve implements `gpuvc reserve`, the entrypoint of GPU
// reservation pods.
package reserve

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
	"github.com/spf13/cobra"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2/textlogger"

	"github.com/gpuvc/gpuvc/api/contract"
	"github.com/gpuvc/gpuvc/cmd/gpuvc/commands/cli"
	"github.com/gpuvc/gpuvc/gpu/inventory"
	"github.com/gpuvc/gpuvc/syncer/share/reserve"
)

type flags struct {
	simulate     bool
	podName      string
	podNamespace string
	apiWait      time.Duration
}

// NewCommand returns the reserve command. --pod-name and --pod-namespace
// default to $POD_NAME and $POD_NAMESPACE as they are when the command is built.
func NewCommand(streams cli.Streams, globals *cli.Globals) *cobra.Command {
	f := &flags{}
	cmd := &cobra.Command{
		Use:   "reserve",
		Short: "Reservation pod entrypoint: record the pod's one GPU in annotation gpuvc.dev/gpu-uuid, then hold it until SIGTERM",
		Long: "Run as the only process of a GPU reservation pod (nvidia.com/gpu: 1). It reads the UUID of\n" +
			"the one GPU the container sees (NVML; with --simulate, $NVIDIA_VISIBLE_DEVICES as the gpuvc\n" +
			"device plugin sets it), writes it to the pod's own annotation gpuvc.dev/gpu-uuid and then\n" +
			"blocks until SIGTERM, holding the GPU. It fails when the container sees no GPU or more than\n" +
			"one. Without --simulate and without an NVIDIA driver it still accepts a simulated GPU\n" +
			"(GPU-sim-...) in $NVIDIA_VISIBLE_DEVICES. Needs RBAC get and patch on pods in its namespace.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return run(cmd.Context(), streams, globals, f) },
	}
	fs := cmd.Flags()
	fs.BoolVar(&f.simulate, "simulate", false, "no NVML: take the GPU UUID from $"+contract.EnvVisibleDevices+" (simulated nodes running the gpuvc device plugin)")
	fs.StringVar(&f.podName, "pod-name", os.Getenv(reserve.PodNameEnv), "this pod's name (default $"+reserve.PodNameEnv+", downward API metadata.name)")
	fs.StringVar(&f.podNamespace, "pod-namespace", os.Getenv(reserve.PodNamespaceEnv), "this pod's namespace (default $"+reserve.PodNamespaceEnv+", downward API metadata.namespace)")
	fs.DurationVar(&f.apiWait, "api-wait", 5*time.Minute, "how long to wait for an API server that cannot be reached (a new pod's NetworkPolicy may admit it only seconds after it starts) before failing")
	return cmd
}

func run(ctx context.Context, streams cli.Streams, globals *cli.Globals, f *flags) error {
	if f.podName == "" || f.podNamespace == "" {
		return fmt.Errorf("this pod's name and namespace are required: set $%s and $%s from the downward API (or --pod-name, --pod-namespace)", reserve.PodNameEnv, reserve.PodNamespaceEnv)
	}
	uuid := func() (string, error) {
		u, err := reserve.DetectUUID(nvml.New(), os.LookupEnv)
		if errors.Is(err, inventory.ErrNoDriver) {
			err = fmt.Errorf("%w, and %s names no simulated GPU; on a simulated node run `gpuvc reserve --simulate`", err, contract.EnvVisibleDevices)
		}
		return u, err
	}
	if f.simulate {
		uuid = func() (string, error) { return reserve.VisibleDevicesUUID(os.LookupEnv(contract.EnvVisibleDevices)) }
	}
	// Find the GPU before anything else: a local problem is the likelier one.
	id, err := uuid()
	if err != nil {
		return fmt.Errorf("finding the reserved GPU: %w", err)
	}
	cfg, err := globals.RESTConfig()
	if err != nil {
		return fmt.Errorf("API server configuration (kubeconfig or in-cluster): %w", err)
	}
	cfg.UserAgent = "gpuvc-reserve"
	cfg.Timeout = reserve.RequestTimeout
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	ctx = logr.NewContext(ctx, textlogger.NewLogger(textlogger.NewConfig(textlogger.Output(streams.ErrOut))))
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, os.Interrupt)
	defer stop()
	return reserve.Run(ctx, reserve.Options{Client: client, Namespace: f.podNamespace, Name: f.podName,
		UUID: func() (string, error) { return id, nil }, ReachTimeout: f.apiWait})
}
