package usage

import (
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
	"github.com/google/go-cmp/cmp"
)

// reserved is what the driver keeps for itself (615 MiB on a real H200).
const reserved = 615 << 20

func device(uuid string, used, total uint64, util uint32, migMode int, migs []*mock.Device) *mock.Device {
	d := &mock.Device{
		GetUUIDFunc: func() (string, nvml.Return) { return uuid, nvml.SUCCESS },
		// v1 counts the driver's reserve as used; v2 does not (the read uses v2).
		GetMemoryInfoFunc: func() (nvml.Memory, nvml.Return) {
			return nvml.Memory{Used: used + reserved, Total: total}, nvml.SUCCESS
		},
		GetMemoryInfo_v2Func: func() (nvml.Memory_v2, nvml.Return) {
			return nvml.Memory_v2{Used: used, Reserved: reserved, Total: total}, nvml.SUCCESS
		},
		GetUtilizationRatesFunc: func() (nvml.Utilization, nvml.Return) {
			return nvml.Utilization{Gpu: util}, nvml.SUCCESS
		},
		GetMigModeFunc:           func() (int, int, nvml.Return) { return migMode, migMode, nvml.SUCCESS },
		GetMaxMigDeviceCountFunc: func() (int, nvml.Return) { return 7, nvml.SUCCESS },
		GetMigDeviceHandleByIndexFunc: func(i int) (nvml.Device, nvml.Return) {
			if i < len(migs) && migs[i] != nil {
				return migs[i], nvml.SUCCESS
			}
			return nil, nvml.ERROR_NOT_FOUND
		},
	}
	return d
}

func TestReadGPUsAndMIGDevices(t *testing.T) {
	const gib = 1 << 30
	whole := device("GPU-a", 10*gib, 80*gib, 73, nvml.DEVICE_MIG_DISABLE, nil)
	mig1 := device("MIG-1", 2*gib, 10*gib, 0, 0, nil)
	mig2 := device("MIG-2", 0, 40*gib, 0, 0, nil)
	parent := device("GPU-b", 2*gib, 80*gib, 0, nvml.DEVICE_MIG_ENABLE, []*mock.Device{mig1, nil, mig2})
	shutdown := false
	lib := &mock.Interface{
		InitFunc:           func() nvml.Return { return nvml.SUCCESS },
		ShutdownFunc:       func() nvml.Return { shutdown = true; return nvml.SUCCESS },
		DeviceGetCountFunc: func() (int, nvml.Return) { return 2, nvml.SUCCESS },
		DeviceGetHandleByIndexFunc: func(i int) (nvml.Device, nvml.Return) {
			return []nvml.Device{whole, parent}[i], nvml.SUCCESS
		},
	}
	got, err := Read(lib)
	if err != nil {
		t.Fatal(err)
	}
	want := []Sample{
		{UUID: "GPU-a", GPU: 0, UtilizationPercent: ptr(73.0), MemoryUsedBytes: 10 * gib, MemoryTotalBytes: 80 * gib},
		{UUID: "GPU-b", GPU: 1, MemoryUsedBytes: 2 * gib, MemoryTotalBytes: 80 * gib},
		{UUID: "MIG-1", GPU: 1, MIG: true, MemoryUsedBytes: 2 * gib, MemoryTotalBytes: 10 * gib},
		{UUID: "MIG-2", GPU: 1, MIG: true, MemoryUsedBytes: 0, MemoryTotalBytes: 40 * gib},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("samples (-want +got):\n%s", diff)
	}
	if !shutdown {
		t.Error("NVML not shut down")
	}
}

func TestReadErrors(t *testing.T) {
	lib := &mock.Interface{
		InitFunc:           func() nvml.Return { return nvml.SUCCESS },
		ShutdownFunc:       func() nvml.Return { return nvml.SUCCESS },
		DeviceGetCountFunc: func() (int, nvml.Return) { return 0, nvml.ERROR_UNKNOWN },
	}
	if _, err := Read(lib); err == nil {
		t.Error("a failed device count must be an error")
	}
	if _, err := Read(nil); err == nil {
		t.Error("no library must be an error")
	}
}

// A driver without NVML's v2 memory call: v1's figures, reserve included.
func TestReadFallsBackToV1Memory(t *testing.T) {
	d := device("GPU-old", 1<<30, 80<<30, 5, nvml.DEVICE_MIG_DISABLE, nil)
	d.GetMemoryInfo_v2Func = func() (nvml.Memory_v2, nvml.Return) { return nvml.Memory_v2{}, nvml.ERROR_FUNCTION_NOT_FOUND }
	lib := &mock.Interface{
		InitFunc:                   func() nvml.Return { return nvml.SUCCESS },
		ShutdownFunc:               func() nvml.Return { return nvml.SUCCESS },
		DeviceGetCountFunc:         func() (int, nvml.Return) { return 1, nvml.SUCCESS },
		DeviceGetHandleByIndexFunc: func(int) (nvml.Device, nvml.Return) { return d, nvml.SUCCESS },
	}
	got, err := Read(lib)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].MemoryUsedBytes != 1<<30+reserved {
		t.Errorf("samples = %+v, want v1's used (1 GiB + the reserve)", got)
	}
}
