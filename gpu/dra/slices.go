package dra

import (
	"fmt"

	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/dynamic-resource-allocation/resourceslice"

	"github.com/gpuvc/gpuvc/api/contract"
)

// Resources are what the kubelet plugin of node publishes: one pool named
// after the node with every device in one slice (a node has far fewer GPU
// devices than a slice's limit).
func Resources(node string, devices []Device) (resourceslice.DriverResources, error) {
	if len(devices) > resourceapi.ResourceSliceMaxDevices {
		return resourceslice.DriverResources{}, fmt.Errorf("node %s has %d DRA devices, more than the %d of one ResourceSlice", node, len(devices), resourceapi.ResourceSliceMaxDevices)
	}
	api := make([]resourceapi.Device, 0, len(devices))
	for _, d := range devices {
		api = append(api, d.API)
	}
	return resourceslice.DriverResources{Pools: map[string]resourceslice.Pool{
		node: {Slices: []resourceslice.Slice{{Devices: api}}},
	}}, nil
}

// NodeSlice is the ResourceSlice a kubelet plugin would publish for node's
// devices, for a node where none runs (kwok): the pool is the node's, one
// slice of generation 1, owned by the Node (nodeUID) so that it goes with it.
func NodeSlice(node string, nodeUID types.UID, devices []Device) (*resourceapi.ResourceSlice, error) {
	res, err := Resources(node, devices)
	if err != nil {
		return nil, err
	}
	s := &resourceapi.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{Name: node + "-" + contract.DRADriver},
		Spec: resourceapi.ResourceSliceSpec{
			Driver:   contract.DRADriver,
			NodeName: &node,
			Pool:     resourceapi.ResourcePool{Name: node, Generation: 1, ResourceSliceCount: 1},
			Devices:  res.Pools[node].Slices[0].Devices,
		},
	}
	if nodeUID != "" {
		s.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: node, UID: nodeUID}}
	}
	return s, nil
}
