package inventory

import (
	"errors"
	"fmt"
	"slices"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/gpuvc/gpuvc/gpu/mig"
)

// ErrNoDriver is returned when NVML cannot be loaded: no NVIDIA driver here.
var ErrNoDriver = errors.New("NVIDIA driver not found: libnvidia-ml.so.1 could not be loaded")

// NVML reads the inventory through an nvml.Interface: nvml.New() on a node,
// a mock in tests.
type NVML struct {
	Lib nvml.Interface
}

var _ Source = NVML{}

// Inventory initialises NVML, reads every GPU and always shuts NVML down
// again. It never panics: a panicking nvml.Interface implementation (mocks
// panic on calls they do not implement) becomes an error.
func (n NVML) Inventory() (inv Inventory, err error) {
	if n.Lib == nil {
		return Inventory{}, errors.New("no NVML library given")
	}
	defer func() {
		if r := recover(); r != nil {
			inv, err = Inventory{}, fmt.Errorf("NVML call panicked: %v", r)
		}
	}()
	switch ret := n.Lib.Init(); ret {
	case nvml.SUCCESS:
	case nvml.ERROR_LIBRARY_NOT_FOUND:
		return Inventory{}, ErrNoDriver
	default:
		return Inventory{}, fmt.Errorf("NVML init: %s", errString(ret))
	}
	defer func() {
		if ret := n.Lib.Shutdown(); ret != nvml.SUCCESS && err == nil {
			err = fmt.Errorf("NVML shutdown: %s", errString(ret))
		}
	}()
	return read(n.Lib)
}

func errString(r nvml.Return) string { return fmt.Sprintf("%v (%d)", r.Error(), int32(r)) }

func read(lib nvml.Interface) (Inventory, error) {
	var inv Inventory
	if v, ret := lib.SystemGetDriverVersion(); ret == nvml.SUCCESS {
		inv.DriverVersion = v
	}
	if v, ret := lib.SystemGetCudaDriverVersion(); ret == nvml.SUCCESS && v > 0 {
		inv.CUDAVersion = CUDAVersion(v)
	}
	count, ret := lib.DeviceGetCount()
	if ret != nvml.SUCCESS {
		return Inventory{}, fmt.Errorf("NVML device count: %s", errString(ret))
	}
	inv.GPUs = []GPU{}
	for i := range count {
		d, ret := lib.DeviceGetHandleByIndex(i)
		if ret != nvml.SUCCESS {
			return Inventory{}, fmt.Errorf("GPU %d: handle: %s", i, errString(ret))
		}
		g, err := readGPU(i, d)
		if err != nil {
			return Inventory{}, fmt.Errorf("GPU %d: %w", i, err)
		}
		inv.GPUs = append(inv.GPUs, g)
	}
	return inv, nil
}

func readGPU(i int, d nvml.Device) (GPU, error) {
	g := GPU{Index: i}
	var ret nvml.Return
	if g.UUID, ret = d.GetUUID(); ret != nvml.SUCCESS {
		return g, fmt.Errorf("UUID: %s", errString(ret))
	}
	if g.Product, ret = d.GetName(); ret != nvml.SUCCESS {
		return g, fmt.Errorf("name: %s", errString(ret))
	}
	mem, ret := d.GetMemoryInfo()
	if ret != nvml.SUCCESS {
		return g, fmt.Errorf("memory: %s", errString(ret))
	}
	g.MemoryMiB = int64(mem.Total / (1 << 20))
	// PCI address and compute capability describe the GPU; a driver that
	// does not answer leaves them empty rather than failing the inventory.
	if pci, ret := d.GetPciInfo(); ret == nvml.SUCCESS {
		g.PCIBusID = cString(pci.BusId[:])
	}
	if major, minor, ret := d.GetCudaComputeCapability(); ret == nvml.SUCCESS {
		g.ComputeCapability = fmt.Sprintf("%d.%d", major, minor)
	}

	cur, pend, ret := d.GetMigMode()
	switch ret {
	case nvml.SUCCESS:
		g.MIG = MIG{Capable: true, Enabled: cur == nvml.DEVICE_MIG_ENABLE, Pending: pend == nvml.DEVICE_MIG_ENABLE}
	case nvml.ERROR_NOT_SUPPORTED:
		return g, nil
	default:
		return g, fmt.Errorf("MIG mode: %s", errString(ret))
	}
	if !g.MIG.Enabled {
		return g, nil
	}
	var err error
	if g.MIG.Instances, err = readInstances(d, g.Product); err != nil {
		return g, err
	}
	return g, readMIGDevices(d, g.MIG.Instances)
}

// readInstances lists GPU instances of every profile the GPU supports.
func readInstances(d nvml.Device, product string) ([]GPUInstance, error) {
	model, _ := mig.Lookup(product) // nil for unknown products: names are derived
	var out []GPUInstance
	for p := range nvml.GPU_INSTANCE_PROFILE_COUNT {
		info, ret := d.GetGpuInstanceProfileInfo(p)
		if ret == nvml.ERROR_NOT_SUPPORTED || ret == nvml.ERROR_INVALID_ARGUMENT {
			continue
		}
		if ret != nvml.SUCCESS {
			return nil, fmt.Errorf("GPU instance profile %d: %s", p, errString(ret))
		}
		gis, ret := d.GetGpuInstances(&info)
		if ret != nvml.SUCCESS {
			return nil, fmt.Errorf("GPU instances of profile %d: %s", p, errString(ret))
		}
		name := profileName(model, p, info)
		for _, gi := range gis {
			gii, ret := gi.GetInfo()
			if ret != nvml.SUCCESS {
				return nil, fmt.Errorf("GPU instance info: %s", errString(ret))
			}
			out = append(out, GPUInstance{
				ID: int(gii.Id), Profile: name, ProfileID: int(gii.ProfileId),
				Start: int(gii.Placement.Start), Size: int(gii.Placement.Size),
				MemoryMiB: int64(info.MemorySizeMB), Multiprocessors: int(info.MultiprocessorCount),
			})
		}
	}
	slices.SortFunc(out, func(a, b GPUInstance) int { return a.Start - b.Start })
	return out, nil
}

// shape of each NVML profile index: compute slices, "+me", double memory.
var shapes = map[int]struct {
	me, double bool
}{
	nvml.GPU_INSTANCE_PROFILE_1_SLICE:      {},
	nvml.GPU_INSTANCE_PROFILE_1_SLICE_REV1: {me: true},
	nvml.GPU_INSTANCE_PROFILE_1_SLICE_REV2: {double: true},
	nvml.GPU_INSTANCE_PROFILE_2_SLICE:      {},
	nvml.GPU_INSTANCE_PROFILE_2_SLICE_REV1: {me: true},
	nvml.GPU_INSTANCE_PROFILE_3_SLICE:      {},
	nvml.GPU_INSTANCE_PROFILE_4_SLICE:      {},
	nvml.GPU_INSTANCE_PROFILE_7_SLICE:      {},
}

// profileName names a profile the way the driver does. Known models use the
// catalog (the driver's GB figures are not a simple function of MiB, e.g.
// 11008 MiB is "12gb" on H100 NVL); otherwise GB is MiB/1024 rounded up,
// which matches the driver on A100, H100-80GB and A30.
func profileName(m *mig.Model, index int, info nvml.GpuInstanceProfileInfo) string {
	shape := shapes[index]
	slicesN := int(info.SliceCount)
	if m != nil {
		for _, p := range m.Profiles {
			wantSlots := p.ComputeSlices == 1 && p.MemorySlots == 2
			if p.ComputeSlices == slicesN && p.MediaExtensions == shape.me && wantSlots == shape.double {
				return p.Name
			}
		}
	}
	n := mig.ProfileName{ComputeSlices: slicesN, MemoryGB: int((info.MemorySizeMB + 1023) / 1024), MediaExtensions: shape.me}
	return n.String()
}

// readMIGDevices attaches each MIG device to its GPU instance.
func readMIGDevices(d nvml.Device, gis []GPUInstance) error {
	n, ret := d.GetMaxMigDeviceCount()
	if ret != nvml.SUCCESS {
		return fmt.Errorf("MIG device count: %s", errString(ret))
	}
	for j := range n {
		md, ret := d.GetMigDeviceHandleByIndex(j)
		if ret == nvml.ERROR_NOT_FOUND {
			continue // no MIG device at this index
		}
		if ret != nvml.SUCCESS {
			return fmt.Errorf("MIG device %d: %s", j, errString(ret))
		}
		uuid, ret := md.GetUUID()
		if ret != nvml.SUCCESS {
			return fmt.Errorf("MIG device %d UUID: %s", j, errString(ret))
		}
		giID, ret := md.GetGpuInstanceId()
		if ret != nvml.SUCCESS {
			return fmt.Errorf("MIG device %d GPU instance id: %s", j, errString(ret))
		}
		ciID, ret := md.GetComputeInstanceId()
		if ret != nvml.SUCCESS {
			return fmt.Errorf("MIG device %d compute instance id: %s", j, errString(ret))
		}
		k := slices.IndexFunc(gis, func(g GPUInstance) bool { return g.ID == giID })
		if k < 0 {
			return fmt.Errorf("MIG device %s belongs to unknown GPU instance %d", uuid, giID)
		}
		gis[k].Devices = append(gis[k].Devices, MIGDevice{UUID: uuid, ComputeInstanceID: ciID})
	}
	return nil
}

// CUDAVersion turns NVML's CUDA driver version (13000) into "13.0".
func CUDAVersion(v int) string { return fmt.Sprintf("%d.%d", v/1000, v%1000/10) }

// cString reads a NUL-terminated C string out of an NVML char array.
func cString(b []int8) string {
	s := make([]byte, 0, len(b))
	for _, c := range b {
		if c == 0 {
			break
		}
		s = append(s, byte(c))
	}
	return string(s)
}
