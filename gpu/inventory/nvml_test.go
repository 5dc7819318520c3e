package inventory

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxa100"
	"github.com/google/go-cmp/cmp"

	"github.com/gpuvc/gpuvc/gpu/mig"
)

// newDGX returns the dgxa100 mock (8x A100-SXM4-40GB) with fixed UUIDs and
// the MIG-device calls the mock lacks wired to its GPU instances.
func newDGX(t *testing.T) *dgxa100.Server {
	t.Helper()
	s := dgxa100.New()
	for i, d := range s.Devices {
		dev := d.(*dgxa100.Device)
		dev.UUID = fmt.Sprintf("GPU-%d", i)
		wireMIGDevices(dev)
	}
	return s
}

// wireMIGDevices implements GetMaxMigDeviceCount / GetMigDeviceHandleByIndex
// (not in the mock) over the compute instances the test created: one MIG
// device per compute instance, ordered by GPU instance id.
func wireMIGDevices(dev *dgxa100.Device) {
	dev.GetMaxMigDeviceCountFunc = func() (int, nvml.Return) { return 7, nvml.SUCCESS }
	dev.GetMigDeviceHandleByIndexFunc = func(n int) (nvml.Device, nvml.Return) {
		var gis []*dgxa100.GpuInstance
		for gi := range dev.GpuInstances {
			if len(gi.ComputeInstances) > 0 {
				gis = append(gis, gi)
			}
		}
		if n >= len(gis) {
			return nil, nvml.ERROR_NOT_FOUND
		}
		for i := range gis { // stable order: by GPU instance id
			for j := i + 1; j < len(gis); j++ {
				if gis[j].Info.Id < gis[i].Info.Id {
					gis[i], gis[j] = gis[j], gis[i]
				}
			}
		}
		gi := gis[n]
		return &mock.Device{
			GetUUIDFunc: func() (string, nvml.Return) {
				return fmt.Sprintf("MIG-%s-%d", dev.UUID, gi.Info.Id), nvml.SUCCESS
			},
			GetGpuInstanceIdFunc:     func() (int, nvml.Return) { return int(gi.Info.Id), nvml.SUCCESS },
			GetComputeInstanceIdFunc: func() (int, nvml.Return) { return 0, nvml.SUCCESS },
		}, nvml.SUCCESS
	}
}

// createGI makes a GPU instance with one compute instance, as mig-parted would.
func createGI(t *testing.T, d nvml.Device, profileIndex, start, size int) {
	t.Helper()
	info, ret := d.GetGpuInstanceProfileInfo(profileIndex)
	if ret != nvml.SUCCESS {
		t.Fatalf("profile %d: %v", profileIndex, ret)
	}
	gi, ret := d.CreateGpuInstanceWithPlacement(&info, &nvml.GpuInstancePlacement{Start: uint32(start), Size: uint32(size)})
	if ret != nvml.SUCCESS {
		t.Fatal(ret)
	}
	ciInfo, ret := gi.GetComputeInstanceProfileInfo(nvml.COMPUTE_INSTANCE_PROFILE_1_SLICE, nvml.COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED)
	if ret != nvml.SUCCESS {
		t.Fatal(ret)
	}
	if _, ret := gi.CreateComputeInstance(&ciInfo); ret != nvml.SUCCESS {
		t.Fatal(ret)
	}
}

func TestNVMLInventory(t *testing.T) {
	s := newDGX(t)
	d0 := s.Devices[0]
	if ret, _ := d0.SetMigMode(nvml.DEVICE_MIG_ENABLE); ret != nvml.SUCCESS {
		t.Fatal(ret)
	}
	createGI(t, d0, nvml.GPU_INSTANCE_PROFILE_3_SLICE, 4, 4)
	createGI(t, d0, nvml.GPU_INSTANCE_PROFILE_1_SLICE, 0, 1)
	createGI(t, d0, nvml.GPU_INSTANCE_PROFILE_1_SLICE_REV1, 1, 1)
	createGI(t, d0, nvml.GPU_INSTANCE_PROFILE_2_SLICE, 2, 2)
	// GPU 1: MIG enabled, no instances; GPU 7: no MIG support at all.
	s.Devices[1].SetMigMode(nvml.DEVICE_MIG_ENABLE)
	s.Devices[7].(*dgxa100.Device).GetMigModeFunc = func() (int, int, nvml.Return) { return 0, 0, nvml.ERROR_NOT_SUPPORTED }
	// The mock has no PCI address; the C string is read up to its NUL.
	s.Devices[2].(*dgxa100.Device).GetPciInfoFunc = func() (nvml.PciInfo, nvml.Return) {
		var pci nvml.PciInfo
		for i, c := range "00000000:19:00.0" {
			pci.BusId[i] = int8(c)
		}
		return pci, nvml.SUCCESS
	}

	got, err := NVML{Lib: s}.Inventory()
	if err != nil {
		t.Fatal(err)
	}
	const product = "Mock NVIDIA A100-SXM4-40GB" // the mock's name
	// The mock reports the NVML profile index as ProfileId, not the driver id.
	want := Inventory{DriverVersion: "550.54.15", CUDAVersion: "12.4"}
	for i := range 8 {
		want.GPUs = append(want.GPUs, GPU{Index: i, UUID: fmt.Sprintf("GPU-%d", i), Product: product, MemoryMiB: 40960, ComputeCapability: "8.0", MIG: MIG{Capable: i != 7}})
	}
	want.GPUs[2].PCIBusID = "00000000:19:00.0"
	want.GPUs[1].MIG.Enabled, want.GPUs[1].MIG.Pending = true, true
	want.GPUs[0].MIG = MIG{Capable: true, Enabled: true, Pending: true, Instances: []GPUInstance{
		{ID: 1, Profile: "1g.5gb", ProfileID: 0, Start: 0, Size: 1, MemoryMiB: 4864, Multiprocessors: 14, Devices: []MIGDevice{{UUID: "MIG-GPU-0-1"}}},
		{ID: 2, Profile: "1g.5gb+me", ProfileID: 7, Start: 1, Size: 1, MemoryMiB: 4864, Multiprocessors: 14, Devices: []MIGDevice{{UUID: "MIG-GPU-0-2"}}},
		{ID: 3, Profile: "2g.10gb", ProfileID: 1, Start: 2, Size: 2, MemoryMiB: 9856, Multiprocessors: 28, Devices: []MIGDevice{{UUID: "MIG-GPU-0-3"}}},
		{ID: 0, Profile: "3g.20gb", ProfileID: 2, Start: 4, Size: 4, MemoryMiB: 19968, Multiprocessors: 42, Devices: []MIGDevice{{UUID: "MIG-GPU-0-0"}}},
	}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("-want +got:\n%s", diff)
	}

	// Labels and capacity follow from the inventory.
	caps, err := Capacity(got, StrategyMixed)
	if err != nil {
		t.Fatal(err)
	}
	wantCaps := map[string]int64{"nvidia.com/gpu": 6, "nvidia.com/mig-1g.5gb": 1, "nvidia.com/mig-1g.5gb.me": 1, "nvidia.com/mig-2g.10gb": 1, "nvidia.com/mig-3g.20gb": 1}
	if diff := cmp.Diff(wantCaps, caps); diff != "" {
		t.Errorf("capacity -want +got:\n%s", diff)
	}
}

// With the real product name the catalog names the profiles (the mock's
// "Mock NVIDIA ..." name is not in the catalog, so above names are derived).
func TestNVMLInventoryCatalogNames(t *testing.T) {
	s := newDGX(t)
	d := s.Devices[0].(*dgxa100.Device)
	d.GetNameFunc = func() (string, nvml.Return) { return "NVIDIA A100-SXM4-40GB", nvml.SUCCESS }
	d.SetMigMode(nvml.DEVICE_MIG_ENABLE)
	createGI(t, d, nvml.GPU_INSTANCE_PROFILE_1_SLICE_REV2, 6, 2)
	createGI(t, d, nvml.GPU_INSTANCE_PROFILE_4_SLICE, 0, 4)
	got, err := NVML{Lib: s}.Inventory()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, gi := range got.GPUs[0].MIG.Instances {
		names = append(names, fmt.Sprintf("%s@%d", gi.Profile, gi.Start))
	}
	if diff := cmp.Diff([]string{"4g.20gb@0", "1g.10gb@6"}, names); diff != "" {
		t.Errorf("-want +got:\n%s", diff)
	}
}

func TestProfileName(t *testing.T) {
	nvl, _ := mig.Lookup("NVIDIA-H100-NVL")
	a30, _ := mig.Lookup("NVIDIA-A30")
	a100, _ := mig.Lookup("NVIDIA-A100-SXM4-80GB")
	tests := map[string]struct {
		model *mig.Model
		index int
		info  nvml.GpuInstanceProfileInfo
		want  string
	}{
		"nvl 1g from catalog":      {nvl, nvml.GPU_INSTANCE_PROFILE_1_SLICE, nvml.GpuInstanceProfileInfo{SliceCount: 1, MemorySizeMB: 11008}, "1g.12gb"},
		"nvl 1g derived is off":    {nil, nvml.GPU_INSTANCE_PROFILE_1_SLICE, nvml.GpuInstanceProfileInfo{SliceCount: 1, MemorySizeMB: 11008}, "1g.11gb"},
		"nvl double 1g":            {nvl, nvml.GPU_INSTANCE_PROFILE_1_SLICE_REV2, nvml.GpuInstanceProfileInfo{SliceCount: 1, MemorySizeMB: 22144}, "1g.24gb"},
		"a30 2g+me":                {a30, nvml.GPU_INSTANCE_PROFILE_2_SLICE_REV1, nvml.GpuInstanceProfileInfo{SliceCount: 2, MemorySizeMB: 11968}, "2g.12gb+me"},
		"a30 derived 4g":           {nil, nvml.GPU_INSTANCE_PROFILE_4_SLICE, nvml.GpuInstanceProfileInfo{SliceCount: 4, MemorySizeMB: 24000}, "4g.24gb"},
		"a100-80 7g":               {a100, nvml.GPU_INSTANCE_PROFILE_7_SLICE, nvml.GpuInstanceProfileInfo{SliceCount: 7, MemorySizeMB: 80896}, "7g.80gb"},
		"a100-80 1g+me":            {a100, nvml.GPU_INSTANCE_PROFILE_1_SLICE_REV1, nvml.GpuInstanceProfileInfo{SliceCount: 1, MemorySizeMB: 9728}, "1g.10gb+me"},
		"unknown shape falls back": {a100, nvml.GPU_INSTANCE_PROFILE_6_SLICE, nvml.GpuInstanceProfileInfo{SliceCount: 6, MemorySizeMB: 60000}, "6g.59gb"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := profileName(tc.model, tc.index, tc.info); got != tc.want {
				t.Errorf("profileName() = %q, want %q", got, tc.want)
			}
		})
	}
}

// countingLib wraps a mock to count Shutdown calls.
func countingLib(init nvml.Return, shutdowns *int) *mock.Interface {
	return &mock.Interface{
		InitFunc:     func() nvml.Return { return init },
		ShutdownFunc: func() nvml.Return { *shutdowns++; return nvml.SUCCESS },
	}
}

func TestNVMLInitFailures(t *testing.T) {
	tests := map[string]struct {
		ret     nvml.Return
		isNoDrv bool
		want    string
	}{
		"library not found": {nvml.ERROR_LIBRARY_NOT_FOUND, true, "NVIDIA driver not found: libnvidia-ml.so.1 could not be loaded"},
		"driver not loaded": {nvml.ERROR_DRIVER_NOT_LOADED, false, "NVML init: "},
		"no permission":     {nvml.ERROR_NO_PERMISSION, false, "NVML init: "},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			shutdowns := 0
			_, err := NVML{Lib: countingLib(tc.ret, &shutdowns)}.Inventory()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error = %v, want %q", err, tc.want)
			}
			if errors.Is(err, ErrNoDriver) != tc.isNoDrv {
				t.Errorf("errors.Is(ErrNoDriver) = %v, want %v", !tc.isNoDrv, tc.isNoDrv)
			}
			if shutdowns != 0 {
				t.Errorf("Shutdown called %d times after a failed Init", shutdowns)
			}
		})
	}
}

func TestNVMLAlwaysShutsDown(t *testing.T) {
	tests := map[string]struct {
		setup func(*mock.Interface)
		want  string
	}{
		"success": {func(l *mock.Interface) {
			l.SystemGetDriverVersionFunc = func() (string, nvml.Return) { return "", nvml.ERROR_NOT_SUPPORTED }
			l.SystemGetCudaDriverVersionFunc = func() (int, nvml.Return) { return 0, nvml.ERROR_NOT_SUPPORTED }
			l.DeviceGetCountFunc = func() (int, nvml.Return) { return 0, nvml.SUCCESS }
		}, ""},
		"device count fails": {func(l *mock.Interface) {
			l.SystemGetDriverVersionFunc = func() (string, nvml.Return) { return "x", nvml.SUCCESS }
			l.SystemGetCudaDriverVersionFunc = func() (int, nvml.Return) { return 13000, nvml.SUCCESS }
			l.DeviceGetCountFunc = func() (int, nvml.Return) { return 0, nvml.ERROR_UNKNOWN }
		}, "NVML device count: "},
		"unimplemented call panics": {func(l *mock.Interface) {}, "NVML call panicked"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			shutdowns := 0
			lib := countingLib(nvml.SUCCESS, &shutdowns)
			tc.setup(lib)
			inv, err := NVML{Lib: lib}.Inventory()
			if tc.want == "" && err != nil {
				t.Fatal(err)
			}
			if tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Fatalf("error = %v, want %q", err, tc.want)
			}
			if tc.want == "" && inv.GPUs == nil {
				t.Error("an empty node must still list GPUs as [] (stable JSON)")
			}
			if shutdowns != 1 {
				t.Errorf("Shutdown called %d times, want 1", shutdowns)
			}
		})
	}
}

func TestNVMLShutdownError(t *testing.T) {
	lib := &mock.Interface{
		InitFunc:                       func() nvml.Return { return nvml.SUCCESS },
		ShutdownFunc:                   func() nvml.Return { return nvml.ERROR_UNKNOWN },
		SystemGetDriverVersionFunc:     func() (string, nvml.Return) { return "1", nvml.SUCCESS },
		SystemGetCudaDriverVersionFunc: func() (int, nvml.Return) { return 12080, nvml.SUCCESS },
		DeviceGetCountFunc:             func() (int, nvml.Return) { return 0, nvml.SUCCESS },
	}
	if _, err := (NVML{Lib: lib}).Inventory(); err == nil || !strings.Contains(err.Error(), "NVML shutdown") {
		t.Errorf("error = %v, want the shutdown failure", err)
	}
}

func TestNVMLDeviceErrorsNameTheGPU(t *testing.T) {
	s := newDGX(t)
	s.Devices[3].(*dgxa100.Device).GetMemoryInfoFunc = func() (nvml.Memory, nvml.Return) { return nvml.Memory{}, nvml.ERROR_GPU_IS_LOST }
	_, err := NVML{Lib: s}.Inventory()
	if err == nil || !strings.Contains(err.Error(), "GPU 3: memory: ") {
		t.Errorf("error = %v, want it to name GPU 3", err)
	}
}

// On this GPU-less machine the real library must fail cleanly, not panic.
func TestRealNVMLWithoutDriver(t *testing.T) {
	inv, err := NVML{Lib: nvml.New()}.Inventory()
	if err == nil {
		t.Skipf("an NVIDIA driver is present (%d GPUs); this test is for machines without one", len(inv.GPUs))
	}
	if !errors.Is(err, ErrNoDriver) {
		t.Fatalf("error = %v, want ErrNoDriver", err)
	}
	if !strings.Contains(err.Error(), "libnvidia-ml.so.1") {
		t.Errorf("error %q does not name the library", err)
	}
}
