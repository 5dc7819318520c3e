package dra

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	"k8s.io/klog/v2"

	"github.com/gpuvc/gpuvc/api/contract"
	"github.com/gpuvc/gpuvc/gpu/inventory"
)

// DefaultKubeletDir is the kubelet's root folder (--root-dir).
const DefaultKubeletDir = "/var/lib/kubelet"

// Options configure Serve.
type Options struct {
	// NodeName is the node the plugin serves; its pool has the node's name.
	NodeName string
	// Client publishes the ResourceSlices (create, update, delete
	// resourceslices; get nodes) and reads the claims being prepared.
	Client kubernetes.Interface
	// Inventory's GPUs served through DRA (GPU.DRA) are published.
	Inventory inventory.Inventory
	// KubeletDir is the kubelet's root folder: the plugin registers in its
	// plugins_registry and serves from plugins/<driver>. Empty:
	// DefaultKubeletDir.
	KubeletDir string
	// CDIDir is a folder the container runtime reads CDI specs from (for
	// containerd, one of cdi_spec_dirs). Empty: DefaultCDIDir.
	CDIDir string
}

// Serve registers the kubelet plugin with the kubelet, publishes the
// devices of o.Inventory's DRA GPUs as the node's ResourceSlice and prepares
// the claims the kubelet asks for, until ctx ends (then it unregisters and
// returns nil) or publishing fails for good. The kubelet need not run yet:
// it finds the registration socket when it starts, and the slice is
// published once it has registered the Node. It logs to the logger
// from ctx.
func Serve(ctx context.Context, o Options) error {
	devices := Devices(o.Inventory)
	if len(devices) == 0 {
		return errors.New("the inventory has no GPU served through DRA: nothing to publish (simulate some with dra=<n>)")
	}
	if o.NodeName == "" || o.Client == nil {
		return errors.New("the DRA kubelet plugin needs a node name and an API client")
	}
	kubeletDir, cdi := o.KubeletDir, o.CDIDir
	if kubeletDir == "" {
		kubeletDir = DefaultKubeletDir
	}
	if cdi == "" {
		cdi = DefaultCDIDir
	}
	registry := filepath.Join(kubeletDir, "plugins_registry")
	pluginDir := filepath.Join(kubeletDir, "plugins", contract.DRADriver)
	for _, dir := range []string{registry, pluginDir, cdi} {
		if err := os.MkdirAll(dir, 0o750); err != nil {
			return err
		}
	}
	resources, err := Resources(o.NodeName, devices)
	if err != nil {
		return err
	}
	log := logr.FromContextOrDiscard(ctx).WithName("dra")
	d := newDriver(o.NodeName, devices, cdiDir(cdi), log)
	helper, err := kubeletplugin.Start(klog.NewContext(ctx, log), d,
		kubeletplugin.DriverName(contract.DRADriver),
		kubeletplugin.NodeName(o.NodeName),
		kubeletplugin.KubeClient(o.Client),
		kubeletplugin.RegistrarDirectoryPath(registry),
		kubeletplugin.PluginDataDirectoryPath(pluginDir),
		kubeletplugin.GRPCVerbosity(4),
	)
	if err != nil {
		return fmt.Errorf("starting the DRA kubelet plugin: %w", err)
	}
	defer helper.Stop()
	// The slices are owned by the Node, which the kubelet registers after
	// it found the plugin: publish once it exists.
	if err := waitForNode(ctx, o.Client, o.NodeName); err != nil {
		return nil // ctx ended
	}
	if err := helper.PublishResources(ctx, resources); err != nil {
		return fmt.Errorf("publishing the ResourceSlice of node %s: %w", o.NodeName, err)
	}
	log.Info("serving GPUs through DRA", "node", o.NodeName, "devices", len(devices), "cdiDir", cdi)
	select {
	case <-ctx.Done():
		return nil
	case err := <-d.fatal:
		return err
	}
}

// waitForNode polls until the Node exists; it fails only when ctx ends.
func waitForNode(ctx context.Context, client kubernetes.Interface, name string) error {
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for {
		if _, err := client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{}); err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}
