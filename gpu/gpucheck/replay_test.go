package gpucheck

import (
	"context"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
)

// A replay of one real NVIDIA H200 (driver 580.159.04, CUDA 13.0, MIG off),
// from what NVML and nvidia-smi answered on it on 2026-11-28 (the XML is
// testdata/h200-smi.xml): NVML's answers through go-nvml's mocks, nvidia-smi's
// through fakeSMI, the load and the allocation through fakeWorkloads, all
// reading one state.

const (
	h200UUID     = "GPU-70dd6be1-a751-2169-218b-2cdb3edb9e59"
	h200Total    = 150754820096 // bytes: 143771 MiB
	h200Reserved = 644939776    // what the driver keeps: 615 MiB
	// h200LoadUsed is what the matrix-product loop held (4082 MiB).
	h200LoadUsed = 4271898624
)

// h200Profiles is NVML's profile table by profile index, with names and
// placements (start:size) as the driver gave them.
var h200Profiles = map[int]struct {
	info       nvml.GpuInstanceProfileInfo
	name       string
	placements []nvml.GpuInstancePlacement
}{
	0: {nvml.GpuInstanceProfileInfo{Id: 19, SliceCount: 1, InstanceCount: 7, MultiprocessorCount: 16, MemorySizeMB: 16384}, "1g.18gb", places(1, 0, 1, 2, 3, 4, 5, 6)},
	1: {nvml.GpuInstanceProfileInfo{Id: 14, SliceCount: 2, InstanceCount: 3, MultiprocessorCount: 32, MemorySizeMB: 33280}, "2g.35gb", places(2, 0, 2, 4)},
	2: {nvml.GpuInstanceProfileInfo{Id: 9, SliceCount: 3, InstanceCount: 2, MultiprocessorCount: 60, MemorySizeMB: 71424}, "3g.71gb", places(4, 0, 4)},
	3: {nvml.GpuInstanceProfileInfo{Id: 5, SliceCount: 4, InstanceCount: 1, MultiprocessorCount: 64, MemorySizeMB: 71424}, "4g.71gb", places(4, 0)},
	4: {nvml.GpuInstanceProfileInfo{Id: 0, SliceCount: 7, InstanceCount: 1, MultiprocessorCount: 132, MemorySizeMB: 143360}, "7g.141gb", places(8, 0)},
	7: {nvml.GpuInstanceProfileInfo{Id: 20, SliceCount: 1, InstanceCount: 1, MultiprocessorCount: 16, MemorySizeMB: 16384}, "1g.18gb+me", places(1, 0, 1, 2, 3, 4, 5, 6)},
	9: {nvml.GpuInstanceProfileInfo{Id: 15, SliceCount: 1, InstanceCount: 4, MultiprocessorCount: 26, MemorySizeMB: 33280}, "1g.35gb", places(2, 0, 2, 4, 6)},
}

func places(size uint32, starts ...uint32) []nvml.GpuInstancePlacement {
	out := make([]nvml.GpuInstancePlacement, len(starts))
	for i, s := range starts {
		out[i] = nvml.GpuInstancePlacement{Start: s, Size: size}
	}
	return out
}

// h200 is the replayed machine's state.
type h200 struct {
	mu    sync.Mutex
	busy  bool
	procs []nvml.ProcessInfo
	// noV2Memory makes the driver refuse NVML's v2 memory call, so readers
	// fall back to v1, which counts the reserve as used.
	noV2Memory bool
	// loadUnseen keeps utilization at 0 while the load runs.
	loadUnseen bool
	// profileMiB overrides NVML's memory for a profile index.
	profileMiB map[int]uint64
	// xml replaces nvidia-smi -q -x's answer.
	xml []byte
}

func (h *h200) used() uint64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	var u uint64
	if h.busy {
		u += h200LoadUsed
	}
	for _, p := range h.procs {
		u += p.UsedGpuMemory
	}
	return u
}

func (h *h200) util() uint32 {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.busy && !h.loadUnseen {
		return 100
	}
	return 0
}

func cArray(s string) (b [32]int8) {
	for i, c := range s {
		b[i] = int8(c)
	}
	return b
}

func (h *h200) device() *mock.Device {
	return &mock.Device{
		GetUUIDFunc: func() (string, nvml.Return) { return h200UUID, nvml.SUCCESS },
		GetNameFunc: func() (string, nvml.Return) { return "NVIDIA H200", nvml.SUCCESS },
		GetMemoryInfoFunc: func() (nvml.Memory, nvml.Return) {
			used := h.used() + h200Reserved
			return nvml.Memory{Total: h200Total, Used: used, Free: h200Total - used}, nvml.SUCCESS
		},
		GetMemoryInfo_v2Func: func() (nvml.Memory_v2, nvml.Return) {
			if h.noV2Memory {
				return nvml.Memory_v2{}, nvml.ERROR_FUNCTION_NOT_FOUND
			}
			used := h.used()
			return nvml.Memory_v2{Total: h200Total, Reserved: h200Reserved, Used: used, Free: h200Total - h200Reserved - used}, nvml.SUCCESS
		},
		GetPciInfoFunc: func() (nvml.PciInfo, nvml.Return) {
			return nvml.PciInfo{BusId: cArray("00000000:00:06.0")}, nvml.SUCCESS
		},
		GetCudaComputeCapabilityFunc: func() (int, int, nvml.Return) { return 9, 0, nvml.SUCCESS },
		GetMigModeFunc:               func() (int, int, nvml.Return) { return nvml.DEVICE_MIG_DISABLE, nvml.DEVICE_MIG_DISABLE, nvml.SUCCESS },
		GetGpuInstanceProfileInfoFunc: func(p int) (nvml.GpuInstanceProfileInfo, nvml.Return) {
			if p >= nvml.GPU_INSTANCE_PROFILE_COUNT {
				return nvml.GpuInstanceProfileInfo{}, nvml.ERROR_INVALID_ARGUMENT
			}
			e, ok := h200Profiles[p]
			if !ok {
				return nvml.GpuInstanceProfileInfo{}, nvml.ERROR_NOT_SUPPORTED
			}
			if m, ok := h.profileMiB[p]; ok {
				e.info.MemorySizeMB = m
			}
			return e.info, nvml.SUCCESS
		},
		GetGpuInstancePossiblePlacementsFunc: func(info *nvml.GpuInstanceProfileInfo) ([]nvml.GpuInstancePlacement, nvml.Return) {
			for _, e := range h200Profiles {
				if e.info.Id == info.Id {
					return e.placements, nvml.SUCCESS
				}
			}
			return nil, nvml.ERROR_INVALID_ARGUMENT
		},
		GetUtilizationRatesFunc:    func() (nvml.Utilization, nvml.Return) { return nvml.Utilization{Gpu: h.util()}, nvml.SUCCESS },
		GetSupportedEventTypesFunc: func() (uint64, nvml.Return) { return 0xff9f, nvml.SUCCESS },
		RegisterEventsFunc:         func(uint64, nvml.EventSet) nvml.Return { return nvml.SUCCESS },
		GetComputeRunningProcessesFunc: func() ([]nvml.ProcessInfo, nvml.Return) {
			h.mu.Lock()
			defer h.mu.Unlock()
			return append([]nvml.ProcessInfo(nil), h.procs...), nvml.SUCCESS
		},
	}
}

// lib is NVML on the replayed machine.
func (h *h200) lib() nvml.Interface {
	d := h.device()
	return &mock.Interface{
		InitFunc:                       func() nvml.Return { return nvml.SUCCESS },
		ShutdownFunc:                   func() nvml.Return { return nvml.SUCCESS },
		SystemGetDriverVersionFunc:     func() (string, nvml.Return) { return "580.159.04", nvml.SUCCESS },
		SystemGetCudaDriverVersionFunc: func() (int, nvml.Return) { return 13000, nvml.SUCCESS },
		DeviceGetCountFunc:             func() (int, nvml.Return) { return 1, nvml.SUCCESS },
		DeviceGetHandleByIndexFunc: func(i int) (nvml.Device, nvml.Return) {
			if i != 0 {
				return nil, nvml.ERROR_INVALID_ARGUMENT
			}
			return d, nvml.SUCCESS
		},
		EventSetCreateFunc: func() (nvml.EventSet, nvml.Return) {
			return &mock.EventSet{
				// The real wait returned ERROR_TIMEOUT after its timeout.
				WaitFunc: func(ms uint32) (nvml.EventData, nvml.Return) {
					time.Sleep(time.Duration(min(ms, 50)) * time.Millisecond)
					return nvml.EventData{}, nvml.ERROR_TIMEOUT
				},
				FreeFunc: func() nvml.Return { return nvml.SUCCESS },
			}, nvml.SUCCESS
		},
	}
}

func (h *h200) profileName(_ nvml.Device, p int) string { return h200Profiles[p].name }

// fakeSMI answers as nvidia-smi did on the machine: the captured XML, and
// query values from the state, MiB rounded up as nvidia-smi rounds them.
type fakeSMI struct{ h *h200 }

func (f fakeSMI) XML(context.Context) ([]byte, error) {
	if f.h.xml != nil {
		return f.h.xml, nil
	}
	return os.ReadFile("testdata/h200-smi.xml")
}

func (f fakeSMI) Query(_ context.Context, fields ...string) ([]map[string]string, error) {
	values := map[string]string{
		"uuid": h200UUID, "compute_cap": "9.0", "utilization.gpu": fmt.Sprint(f.h.util()),
		"memory.used": fmt.Sprint((f.h.used() + 1<<20 - 1) >> 20), "memory.total": "143771",
	}
	row := map[string]string{}
	for _, k := range fields {
		v, ok := values[k]
		if !ok {
			return nil, fmt.Errorf("fakeSMI: no field %q", k)
		}
		row[k] = v
	}
	return []map[string]string{row}, nil
}

// fakeWorkloads change the state the way the real programs changed the GPU.
type fakeWorkloads struct{ h *h200 }

func (w fakeWorkloads) Busy(context.Context, string) (func(), error) {
	w.h.mu.Lock()
	w.h.busy = true
	w.h.mu.Unlock()
	return func() {
		w.h.mu.Lock()
		w.h.busy = false
		w.h.mu.Unlock()
	}, nil
}

// Allocate: nothing on the machine enforces the limit (no HAMi-core).
func (w fakeWorkloads) Allocate(_ context.Context, _ string, mib int64, _ []string) (Allocation, func(), error) {
	const pid = 4242
	w.h.mu.Lock()
	w.h.procs = append(w.h.procs, nvml.ProcessInfo{Pid: pid, UsedGpuMemory: uint64(mib) << 20})
	w.h.mu.Unlock()
	return Allocation{PID: pid, Allocated: true}, func() {
		w.h.mu.Lock()
		w.h.procs = nil
		w.h.mu.Unlock()
	}, nil
}

// config runs the check on the replayed machine, quickly.
func (h *h200) config() Config {
	return Config{
		Lib: h.lib(), SMI: fakeSMI{h}, Workloads: fakeWorkloads{h}, Machine: "replayed H200",
		Samples: 2, Interval: time.Millisecond, EventWait: 200 * time.Millisecond, ProfileName: h.profileName,
	}
}
