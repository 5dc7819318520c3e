package localcluster

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuvc/gpuvc/gpu/dra"
	"github.com/gpuvc/gpuvc/gpu/inventory"
	"github.com/gpuvc/gpuvc/kind/nodepool"
)

// KwokDevices are the DRA devices of a kwok node whose GPUs are partly
// served through DRA (nodepool.GPUs.DRA): whole GPUs, simulated with the node
// name as seed, as the DRA kubelet plugin would publish them.
func KwokDevices(n nodepool.Node) ([]dra.Device, error) {
	if n.GPU == nil || n.GPU.DRA == 0 {
		return nil, nil
	}
	inv, err := inventory.Simulate(inventory.Spec{
		Product: n.GPU.Product, Count: n.GPU.Count, MemoryMiB: int64(n.GPU.MemoryMiB), Seed: n.Name, DRA: n.GPU.DRA,
	})
	if err != nil {
		return nil, fmt.Errorf("node %s: simulating its DRA GPUs: %w", n.Name, err)
	}
	return dra.Devices(inv), nil
}

// publishKwokSlices stands in for the DRA kubelet plugin no kwok node runs:
// for every node with DRA GPUs it installs the DeviceClasses (once) and
// creates the node's ResourceSlice, owned by its Node.
func (cp *ControlPlane) publishKwokSlices(ctx context.Context, nodes map[string]nodepool.Node, created map[string]*corev1.Node) error {
	classes := false
	for name, n := range nodes {
		devices, err := KwokDevices(n)
		if err != nil || len(devices) == 0 {
			if err != nil {
				return err
			}
			continue
		}
		if !classes {
			if err := dra.EnsureDeviceClasses(ctx, cp.Client); err != nil {
				return err
			}
			classes = true
		}
		slice, err := dra.NodeSlice(name, created[name].UID, devices)
		if err != nil {
			return err
		}
		_, err = cp.Client.ResourceV1().ResourceSlices().Create(ctx, slice, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating the ResourceSlice of kwok node %s: %w", name, err)
		}
	}
	return nil
}
