package gpucheck

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/gpuvc/gpuvc/api/contract"
	"github.com/gpuvc/gpuvc/gpu/share"
)

// hamiLibrary is where HAMi's device plugin mounts HAMi-core.
const hamiLibrary = "/usr/local/vgpu/libvgpu.so"

// fractionStep shows the limits gpuvc gives a 0.25 and a 0.5 share of the
// first GPU (Team spec.gpuSharing.fractionLimits), then starts a process with
// the 0.25 limit in its environment that allocates more than it, and reads
// NVML's per-process memory: what HAMi-core-style limits rest on, and whether
// anything here enforces them.
func fractionStep(ctx context.Context, c *Config, f *facts, s *Step) {
	s.Reference = "gpu/share's arithmetic for the GPU's memory; NVML's per-process used memory (nvmlDeviceGetComputeRunningProcesses)"
	if len(f.inv.GPUs) == 0 {
		s.Err = "no inventory from the first step"
		return
	}
	g := f.inv.GPUs[0]
	name := gpuName(g.Index)
	usable, usableOK := usableMiB(c, g.Index)
	var quarter int64
	for _, fr := range []float64{0.25, 0.5} {
		units, err := share.Fraction(fr).Units(g.MemoryMiB)
		if err != nil {
			s.Err = err.Error()
			return
		}
		shareMiB := share.ShareMiB(g.MemoryMiB, units)
		limit := share.MemoryLimitMiB(shareMiB, c.ReserveMiB)
		if fr == 0.25 {
			quarter = limit
		}
		s.add(name, fmt.Sprintf("gpu-fraction %g", fr),
			fmt.Sprintf("%s=%dm %s=%d", contract.EnvCUDAMemoryLimit0, limit, contract.EnvCUDASMLimit, share.SMLimitPercent(units)),
			fmt.Sprintf("share %d of %d MiB, reserve %d MiB", shareMiB, g.MemoryMiB, c.ReserveMiB), Info, "")
		// Pods filling the GPU with this share must fit together in what
		// the driver leaves allocatable, or one meets an out-of-memory error
		// below its own limit.
		n := share.UnitsPerGPU / units
		if !usableOK {
			continue
		}
		sum := int64(n) * limit
		st := OK
		if sum > usable {
			st = Differs
		}
		s.add(name, fmt.Sprintf("%d pods of %g: limits together (MiB)", n, fr), strconv.FormatInt(sum, 10),
			fmt.Sprintf("≤ %d allocatable (total − the driver's reserve)", usable), st, "")
	}
	s.add("", "HAMi-core", hamiPresence(), "", Info, "gpuvc writes the variables; only HAMi-core (libvgpu.so) preloaded in the container enforces them")
	if c.Workloads == nil {
		s.add(name, "over-limit allocation", "", "", NotRead, "no workload runner")
		return
	}
	over := quarter + 1024
	env := []string{fmt.Sprintf("%s=%dm", contract.EnvCUDAMemoryLimit0, quarter), contract.EnvCUDASMLimit + "=25"}
	actx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	a, stop, err := c.Workloads.Allocate(actx, g.UUID, over, env)
	if err != nil {
		s.add(name, "over-limit allocation", "", "", NotRead, err.Error())
		return
	}
	defer stop()
	used, found := processMemory(c, g.Index, a.PID)
	held := "(not in NVML's process list)"
	if found {
		held = fmt.Sprintf("%d MiB", used>>20)
	}
	note := "not enforced: the process holds more than its limit (no HAMi-core in it)"
	switch {
	case !a.Allocated:
		note = "enforced: the allocation over the limit failed: " + a.Message
	case found && int64(used>>20) <= quarter:
		note = "NVML counts less than the limit for the process although its allocation succeeded"
	}
	s.add(name, fmt.Sprintf("process %d with %s=%dm allocates %d MiB", a.PID, contract.EnvCUDAMemoryLimit0, quarter, over),
		held, fmt.Sprintf("limit %d MiB", quarter), Info, note)
	if found && a.Allocated {
		s.add(name, "CUDA context and allocator overhead of that process (MiB)", strconv.FormatInt(int64(used>>20)-over, 10), "", Info,
			"NVML's count for the process minus what it allocated: memory outside the pod's own allocations")
	}
	if !found {
		s.note("NVML did not list process %d: in a container with its own PID namespace NVML shows host PIDs, so a per-process limit monitor must map them", a.PID)
	}
}

// onDevice runs read on GPU index with NVML initialised; false when NVML or the
// device does not answer.
func onDevice(c *Config, index int, read func(nvml.Device) bool) bool {
	if ret := c.Lib.Init(); ret != nvml.SUCCESS {
		return false
	}
	defer c.Lib.Shutdown()
	d, ret := c.Lib.DeviceGetHandleByIndex(index)
	return ret == nvml.SUCCESS && read(d)
}

// processMemory is the GPU memory NVML counts for a process.
func processMemory(c *Config, index, pid int) (used uint64, found bool) {
	found = onDevice(c, index, func(d nvml.Device) bool {
		procs, ret := d.GetComputeRunningProcesses()
		for _, p := range procs {
			if ret == nvml.SUCCESS && int(p.Pid) == pid {
				used = p.UsedGpuMemory
				return true
			}
		}
		return false
	})
	return used, found
}

// usableMiB is what the driver leaves allocatable on an idle GPU: NVML's
// v2 total minus what the driver and firmware reserve.
func usableMiB(c *Config, index int) (usable int64, ok bool) {
	ok = onDevice(c, index, func(d nvml.Device) bool {
		m, ret := d.GetMemoryInfo_v2()
		usable = int64((m.Total - m.Reserved) >> 20)
		return ret == nvml.SUCCESS
	})
	return usable, ok
}

// hamiPresence says whether HAMi-core could be in a process here.
func hamiPresence() string {
	var found []string
	if _, err := os.Stat(hamiLibrary); err == nil {
		found = append(found, hamiLibrary+" exists")
	}
	if strings.Contains(os.Getenv("LD_PRELOAD"), "libvgpu") {
		found = append(found, "LD_PRELOAD names libvgpu")
	}
	if b, err := os.ReadFile("/etc/ld.so.preload"); err == nil && strings.Contains(string(b), "libvgpu") {
		found = append(found, "/etc/ld.so.preload names libvgpu")
	}
	if len(found) == 0 {
		return "absent (no " + hamiLibrary + ", nothing preloads libvgpu)"
	}
	return strings.Join(found, "; ")
}
