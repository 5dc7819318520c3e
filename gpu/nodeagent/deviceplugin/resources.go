// Package deviceplugin is a simulated NVIDIA device plugin: it serves the
// kubelet device-plugin gRPC API (v1beta1) for the GPUs of a simulated
// inventory, so a real kubelet (a kind worker, the local worker node)
// advertises nvidia.com/gpu and nvidia.com/mig-<profile> capacity and hands
// pods NVIDIA_VISIBLE_DEVICES with the simulated UUIDs. Nothing runs on a GPU.
package deviceplugin

import (
	"slices"
	"strings"

	"github.com/gpuvc/gpuvc/api/contract"
	"github.com/gpuvc/gpuvc/gpu/inventory"
	"github.com/gpuvc/gpuvc/gpu/mig"
)

// Resource is one extended resource the plugin advertises and the socket it
// serves it on.
type Resource struct {
	Name string // e.g. nvidia.com/gpu, nvidia.com/mig-1g.10gb
	// Endpoint is the socket file name inside the device-plugin folder.
	Endpoint string
	// DeviceIDs are the UUIDs of its devices, in inventory order.
	DeviceIDs []string
}

// Resources maps an inventory to device-plugin resources with the mixed MIG
// strategy: a GPU with MIG disabled is one nvidia.com/gpu device (its UUID);
// every MIG device of an enabled GPU is one nvidia.com/mig-<profile> device
// (its MIG UUID). GPUs served through DRA (inventory.GPU.DRA) are left out,
// and so are resources without devices; the result is sorted by name and
// agrees with inventory.Capacity(inv, StrategyMixed).
func Resources(inv inventory.Inventory) []Resource {
	inv, _ = inventory.SplitDRA(inv)
	byName := map[string]*Resource{}
	add := func(name, id string) {
		r, ok := byName[name]
		if !ok {
			r = &Resource{Name: name, Endpoint: endpoint(name)}
			byName[name] = r
		}
		r.DeviceIDs = append(r.DeviceIDs, id)
	}
	for _, g := range inv.GPUs {
		if !g.MIG.Enabled {
			add(contract.ResourceGPU, g.UUID)
			continue
		}
		for _, gi := range g.MIG.Instances {
			for _, d := range gi.Devices {
				add(mig.ResourceName(gi.Profile), d.UUID)
			}
		}
	}
	out := make([]Resource, 0, len(byName))
	for _, r := range byName {
		out = append(out, *r)
	}
	slices.SortFunc(out, func(a, b Resource) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// endpoint names a resource's socket: nvidia.com/mig-1g.10gb →
// gpuvc-mig-1g.10gb.sock.
func endpoint(resource string) string {
	return "gpuvc-" + strings.TrimPrefix(resource, contract.NVIDIAPrefix) + ".sock"
}
