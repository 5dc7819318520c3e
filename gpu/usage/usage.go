// Package usage reads how busy a node's GPUs are: per GPU and per MIG device,
// utilization and memory, through NVML.
package usage

import (
	"errors"
	"fmt"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// Sample is one device's usage at one moment.
type Sample struct {
	// UUID of the device: a GPU, or a MIG device (MIG-…).
	UUID string
	// GPU is the index of the physical GPU (a MIG device's parent).
	GPU int
	// MIG is true for a MIG device.
	MIG bool
	// UtilizationPercent is the share of time a kernel ran over NVML's last
	// sample period; nil where NVML does not report it (MIG devices).
	UtilizationPercent *float64
	MemoryUsedBytes    uint64
	MemoryTotalBytes   uint64
}

// Read initialises NVML, samples every GPU and, for GPUs in MIG mode, every MIG
// device, and shuts NVML down again. NVML reports no utilization rates for MIG
// devices (that needs DCGM's profiling metrics), so their samples carry memory
// only.
func Read(lib nvml.Interface) (out []Sample, err error) {
	if lib == nil {
		return nil, errors.New("no NVML library given")
	}
	if ret := lib.Init(); ret != nvml.SUCCESS {
		return nil, fmt.Errorf("NVML init: %v", ret.Error())
	}
	defer lib.Shutdown()
	count, ret := lib.DeviceGetCount()
	if ret != nvml.SUCCESS {
		return nil, fmt.Errorf("NVML device count: %v", ret.Error())
	}
	for i := range count {
		d, ret := lib.DeviceGetHandleByIndex(i)
		if ret != nvml.SUCCESS {
			return nil, fmt.Errorf("GPU %d: handle: %v", i, ret.Error())
		}
		s, err := sample(d, i, false)
		if err != nil {
			return nil, fmt.Errorf("GPU %d: %w", i, err)
		}
		if mode, _, ret := d.GetMigMode(); ret != nvml.SUCCESS || mode != nvml.DEVICE_MIG_ENABLE {
			if u, ret := d.GetUtilizationRates(); ret == nvml.SUCCESS {
				s.UtilizationPercent = ptr(float64(u.Gpu))
			}
			out = append(out, s)
			continue
		}
		out = append(out, s)
		migs, err := migSamples(d, i)
		if err != nil {
			return nil, fmt.Errorf("GPU %d: %w", i, err)
		}
		out = append(out, migs...)
	}
	return out, nil
}

func migSamples(d nvml.Device, gpu int) ([]Sample, error) {
	n, ret := d.GetMaxMigDeviceCount()
	if ret != nvml.SUCCESS {
		return nil, fmt.Errorf("MIG device count: %v", ret.Error())
	}
	var out []Sample
	for j := range n {
		m, ret := d.GetMigDeviceHandleByIndex(j)
		if ret == nvml.ERROR_NOT_FOUND {
			continue // an empty slot
		}
		if ret != nvml.SUCCESS {
			return nil, fmt.Errorf("MIG device %d: %v", j, ret.Error())
		}
		s, err := sample(m, gpu, true)
		if err != nil {
			return nil, fmt.Errorf("MIG device %d: %w", j, err)
		}
		out = append(out, s)
	}
	return out, nil
}

func sample(d nvml.Device, gpu int, mig bool) (Sample, error) {
	uuid, ret := d.GetUUID()
	if ret != nvml.SUCCESS {
		return Sample{}, fmt.Errorf("UUID: %v", ret.Error())
	}
	used, total, ret := memory(d)
	if ret != nvml.SUCCESS {
		return Sample{}, fmt.Errorf("memory of %s: %v", uuid, ret.Error())
	}
	return Sample{UUID: uuid, GPU: gpu, MIG: mig, MemoryUsedBytes: used, MemoryTotalBytes: total}, nil
}

// memory reads used and total memory the way nvidia-smi and dcgm-exporter
// report them: NVML's v2 call, whose Used leaves out what the driver and
// firmware reserve. The v1 call's Used is Total - Free and counts that reserve
// as used (615 MiB on an idle H200, docs/gpu.md "On a real GPU"), so an idle
// GPU would never read as empty; v1 is the fallback for drivers without v2.
func memory(d nvml.Device) (used, total uint64, ret nvml.Return) {
	if m, ret := d.GetMemoryInfo_v2(); ret == nvml.SUCCESS {
		return m.Used, m.Total, ret
	}
	m, ret := d.GetMemoryInfo()
	return m.Used, m.Total, ret
}

func ptr[T any](v T) *T { return &v }
