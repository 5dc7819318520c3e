// Package dra is gpuvc's DRA driver for simulated GPUs: a kubelet plugin
// (k8s.io/dynamic-resource-allocation's kubeletplugin) that publishes a
// node's simulated GPUs served through Dynamic Resource Allocation
// (inventory.GPU.DRA) as ResourceSlices and prepares the devices the
// scheduler allocated to a ResourceClaim by writing a CDI spec, so the
// container sees the device's UUID in NVIDIA_VISIBLE_DEVICES, as the
// simulated device plugin hands it. Nothing runs on a GPU.
//
// It publishes under NVIDIA's driver name (contract.DRADriver) with the
// attribute names NVIDIA's DRA driver uses (type, uuid, productName,
// memory capacity, ...), whole GPUs as type "gpu" and, on a GPU in MIG mode,
// each MIG device (static MIG, as NVIDIA's driver by default) as type "mig";
// DeviceClasses gives the two classes that select them. NodeSlice describes
// a kwok node's devices as one ResourceSlice, so the scheduler allocates
// claims on nodes where no kubelet runs.
package dra
