package dra

import (
	"fmt"
	"strconv"
	"strings"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	"github.com/gpuvc/gpuvc/api/contract"
	"github.com/gpuvc/gpuvc/gpu/inventory"
)

// Device is one device the driver publishes and what a container given it
// sees.
type Device struct {
	// Name is the device's name in its pool: "gpu-<index>" for a whole GPU,
	// "gpu-<index>-mig-<profile>-<start>" for a MIG device.
	Name string
	// UUID is the GPU's or the MIG device's UUID.
	UUID string
	// API is the device as published in a ResourceSlice.
	API resourceapi.Device
}

// Devices lists the devices of inv's GPUs served through DRA (GPU.DRA), in
// inventory order: a GPU with MIG disabled is one device of type "gpu"; a GPU
// in MIG mode publishes one device of type "mig" per MIG device and none for
// itself, as the device plugin's mixed strategy does.
func Devices(inv inventory.Inventory) []Device {
	var out []Device
	for _, g := range inv.GPUs {
		if !g.DRA {
			continue
		}
		if !g.MIG.Enabled {
			out = append(out, gpuDevice(inv, g))
			continue
		}
		for _, gi := range g.MIG.Instances {
			for _, d := range gi.Devices {
				out = append(out, migDevice(inv, g, gi, d))
			}
		}
	}
	return out
}

func gpuDevice(inv inventory.Inventory, g inventory.GPU) Device {
	name := "gpu-" + strconv.Itoa(g.Index)
	attrs := common(inv, g, contract.DRATypeGPU, g.UUID)
	if v, ok := semver(g.ComputeCapability); ok {
		attrs["cudaComputeCapability"] = resourceapi.DeviceAttribute{VersionValue: &v}
	}
	return Device{Name: name, UUID: g.UUID, API: resourceapi.Device{
		Name:       name,
		Attributes: attrs,
		Capacity:   map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{"memory": mib(g.MemoryMiB)},
	}}
}

func migDevice(inv inventory.Inventory, g inventory.GPU, gi inventory.GPUInstance, d inventory.MIGDevice) Device {
	name := fmt.Sprintf("gpu-%d-mig-%s-%d", g.Index, dnsPart(gi.Profile), gi.Start)
	attrs := common(inv, g, contract.DRATypeMIG, d.UUID)
	attrs["profile"] = str(gi.Profile)
	attrs["parentUUID"] = str(g.UUID)
	capacity := map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{"memory": mib(gi.MemoryMiB)}
	if gi.Multiprocessors > 0 {
		capacity["multiprocessors"] = resourceapi.DeviceCapacity{Value: *resource.NewQuantity(int64(gi.Multiprocessors), resource.DecimalSI)}
	}
	return Device{Name: name, UUID: d.UUID, API: resourceapi.Device{Name: name, Attributes: attrs, Capacity: capacity}}
}

// common are the attributes of a GPU and of its MIG devices: what the
// inventory knows (simulated inventories know no driver or CUDA version).
func common(inv inventory.Inventory, g inventory.GPU, typ, uuid string) map[resourceapi.QualifiedName]resourceapi.DeviceAttribute {
	attrs := map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
		contract.DRAAttributeType: str(typ),
		contract.DRAAttributeUUID: str(uuid),
		"productName":             str(g.Product),
		"index":                   {IntValue: ptr.To(int64(g.Index))},
	}
	if v, ok := semver(inv.DriverVersion); ok {
		attrs["driverVersion"] = resourceapi.DeviceAttribute{VersionValue: &v}
	}
	if v, ok := semver(inv.CUDAVersion); ok {
		attrs["cudaDriverVersion"] = resourceapi.DeviceAttribute{VersionValue: &v}
	}
	if inv.Simulated {
		attrs[contract.DRAAttributeSimulated] = resourceapi.DeviceAttribute{BoolValue: ptr.To(true)}
	}
	return attrs
}

func str(s string) resourceapi.DeviceAttribute { return resourceapi.DeviceAttribute{StringValue: &s} }

func mib(n int64) resourceapi.DeviceCapacity {
	return resourceapi.DeviceCapacity{Value: *resource.NewQuantity(n<<20, resource.BinarySI)}
}

// semver writes a dotted version ("580.65.06", "13.0", "9.0") as the
// semantic version a version attribute needs ("580.65.6", "13.0.0").
func semver(v string) (string, bool) {
	parts := strings.Split(v, ".")
	if v == "" || len(parts) > 3 {
		return "", false
	}
	nums := []string{"0", "0", "0"}
	for i, p := range parts {
		n, err := strconv.ParseUint(p, 10, 32)
		if err != nil {
			return "", false
		}
		nums[i] = strconv.FormatUint(n, 10)
	}
	return strings.Join(nums, "."), true
}

// dnsPart keeps the lower-case letters and digits of a MIG profile name:
// "1g.10gb+me" → "1g10gbme", part of a device name (a DNS label).
func dnsPart(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
		}
	}
	return b.String()
}
