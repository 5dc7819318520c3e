package usage

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"

	"github.com/gpuvc/gpuvc/gpu/inventory"
)

// Simulated is the usage of simulated GPUs, read the way real ones are read:
// Read serves the inventory as an NVML library (go-nvml's mock types, filled
// from the inventory) to the same usage.Read the agent runs on real GPUs, with
// each GPU's utilization taken from a file that tests and operators write:
//
//	<gpu> <percent>     e.g. "3 80" or "GPU-sim-…-0003 0"
//
// <gpu> is an index or a UUID of the inventory; a later line about the same GPU
// wins; blank lines and lines starting with # are skipped. A GPU the file does
// not name reports no utilization (NVML's "not supported"), so it is never
// judged idle; a missing file names none. Memory in use reads 0.
type Simulated struct {
	Inventory inventory.Inventory
	// Path of the utilization file; read at every Read.
	Path string
}

// Read samples the simulated GPUs: the file first (a malformed line is an
// error naming it), then usage.Read over the simulated NVML library.
func (s Simulated) Read() ([]Sample, error) {
	percent, err := s.levels()
	if err != nil {
		return nil, err
	}
	return Read(simulatedNVML(s.Inventory, percent))
}

// levels reads the file into utilization per GPU index.
func (s Simulated) levels() (map[int]uint32, error) {
	b, err := os.ReadFile(s.Path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("simulated GPU utilization file: %w", err)
	}
	out := map[int]uint32{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for n := 1; sc.Scan(); n++ {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 || strings.HasPrefix(fields[0], "#") {
			continue
		}
		if len(fields) != 2 {
			return nil, fmt.Errorf("%s line %d %q: want \"<gpu index or UUID> <percent 0-100>\"", s.Path, n, sc.Text())
		}
		gpu, err := s.gpu(fields[0])
		if err != nil {
			return nil, fmt.Errorf("%s line %d: %w", s.Path, n, err)
		}
		p, err := strconv.ParseUint(strings.TrimSuffix(fields[1], "%"), 10, 32)
		if err != nil || p > 100 {
			return nil, fmt.Errorf("%s line %d: utilization %q is not a percent from 0 to 100", s.Path, n, fields[1])
		}
		out[gpu] = uint32(p)
	}
	return out, sc.Err()
}

func (s Simulated) gpu(id string) (int, error) {
	for _, g := range s.Inventory.GPUs {
		if id == g.UUID || id == strconv.Itoa(g.Index) {
			return g.Index, nil
		}
	}
	return 0, fmt.Errorf("GPU %q is neither an index nor a UUID of the node's %d simulated GPUs", id, len(s.Inventory.GPUs))
}

const mib = 1 << 20

// simulatedNVML is an NVML library over the inventory: device handles by
// index, UUIDs, memory, MIG mode and MIG devices, and the given utilization.
func simulatedNVML(inv inventory.Inventory, percent map[int]uint32) nvml.Interface {
	devices := make([]nvml.Device, len(inv.GPUs))
	for i, g := range inv.GPUs {
		devices[i] = simulatedGPU(g, percent)
	}
	return &mock.Interface{
		InitFunc:           func() nvml.Return { return nvml.SUCCESS },
		ShutdownFunc:       func() nvml.Return { return nvml.SUCCESS },
		DeviceGetCountFunc: func() (int, nvml.Return) { return len(devices), nvml.SUCCESS },
		DeviceGetHandleByIndexFunc: func(i int) (nvml.Device, nvml.Return) {
			if i < 0 || i >= len(devices) {
				return nil, nvml.ERROR_INVALID_ARGUMENT
			}
			return devices[i], nvml.SUCCESS
		},
	}
}

func simulatedGPU(g inventory.GPU, percent map[int]uint32) nvml.Device {
	var migs []nvml.Device
	for _, gi := range g.MIG.Instances {
		for _, d := range gi.Devices {
			migs = append(migs, simulatedMemory(d.UUID, gi.MemoryMiB, &mock.Device{}))
		}
	}
	mode := nvml.DEVICE_MIG_DISABLE
	if g.MIG.Enabled {
		mode = nvml.DEVICE_MIG_ENABLE
	}
	d := &mock.Device{
		GetMigModeFunc: func() (int, int, nvml.Return) { return mode, mode, nvml.SUCCESS },
		GetUtilizationRatesFunc: func() (nvml.Utilization, nvml.Return) {
			p, ok := percent[g.Index]
			if !ok {
				return nvml.Utilization{}, nvml.ERROR_NOT_SUPPORTED
			}
			return nvml.Utilization{Gpu: p}, nvml.SUCCESS
		},
		GetMaxMigDeviceCountFunc: func() (int, nvml.Return) { return len(migs), nvml.SUCCESS },
		GetMigDeviceHandleByIndexFunc: func(j int) (nvml.Device, nvml.Return) {
			if j < 0 || j >= len(migs) {
				return nil, nvml.ERROR_NOT_FOUND
			}
			return migs[j], nvml.SUCCESS
		},
	}
	return simulatedMemory(g.UUID, g.MemoryMiB, d)
}

// simulatedMemory gives d its UUID and memory (none in use).
func simulatedMemory(uuid string, memMiB int64, d *mock.Device) *mock.Device {
	d.GetUUIDFunc = func() (string, nvml.Return) { return uuid, nvml.SUCCESS }
	d.GetMemoryInfo_v2Func = func() (nvml.Memory_v2, nvml.Return) {
		total := uint64(memMiB) * mib
		return nvml.Memory_v2{Total: total, Free: total}, nvml.SUCCESS
	}
	return d
}
