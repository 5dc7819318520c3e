package gpucheck

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/gpuvc/gpuvc/gpu/mig"
)

// migStep sets the catalog's entry for each GPU's model beside NVML's
// GPU-instance profile table (nvmlDeviceGetGpuInstanceProfileInfo and its
// possible placements), which the driver answers on MIG-capable GPUs even with
// MIG off. Nothing is created: no MIG instance may be made on the machine.
func migStep(_ context.Context, c *Config, f *facts, s *Step) {
	s.Reference = "NVML's GPU-instance profile info and possible placements (what nvidia-smi mig -lgip / -lgipp print)"
	if len(f.inv.GPUs) == 0 {
		s.Err = "no inventory from the first step"
		return
	}
	if err := c.Lib.Init(); err != nvml.SUCCESS {
		s.Err = "NVML init: " + err.Error()
		return
	}
	defer c.Lib.Shutdown()
	for _, g := range f.inv.GPUs {
		name := gpuName(g.Index)
		if !g.MIG.Capable {
			s.add(name, "MIG", "not capable", "", Info, "nothing to compare")
			continue
		}
		model, err := mig.Lookup(g.Product)
		if err != nil {
			s.add(name, "catalog model", "(none)", g.Product, Differs, "a MIG-capable GPU the catalog does not know: gpuvc cannot place MIG slices on it")
			continue
		}
		s.compare(name, "catalog: GPU memory (MiB)", strconv.Itoa(model.MemoryMiB), strconv.FormatInt(g.MemoryMiB, 10))
		d, ret := c.Lib.DeviceGetHandleByIndex(g.Index)
		if ret != nvml.SUCCESS {
			s.add(name, "device handle", "", ret.Error(), NotRead, "")
			continue
		}
		compareProfiles(s, c, name, model, d)
	}
}

// nvmlProfile is one row of NVML's profile table.
type nvmlProfile struct {
	info       nvml.GpuInstanceProfileInfo
	name       string // "1g.18gb", from the v2 info; empty where unreadable
	placements []nvml.GpuInstancePlacement
}

func compareProfiles(s *Step, c *Config, gpu string, model *mig.Model, d nvml.Device) {
	var seen []int
	unreadable := 0
	for p := range nvml.GPU_INSTANCE_PROFILE_COUNT {
		info, ret := d.GetGpuInstanceProfileInfo(p)
		switch ret {
		case nvml.SUCCESS:
		case nvml.ERROR_NOT_SUPPORTED, nvml.ERROR_INVALID_ARGUMENT:
			continue // this GPU has no such profile
		default:
			unreadable++
			s.add(gpu, fmt.Sprintf("NVML profile index %d", p), "", ret.Error(), NotRead, "the driver did not answer for this profile")
			continue
		}
		np := nvmlProfile{info: info, name: c.profileName(d, p)}
		np.placements, ret = d.GetGpuInstancePossiblePlacements(&info)
		if ret != nvml.SUCCESS {
			s.add(gpu, fmt.Sprintf("profile id %d placements", info.Id), "", ret.Error(), NotRead, "")
		}
		i := slices.IndexFunc(model.Profiles, func(cp mig.Profile) bool { return cp.DriverID == int(info.Id) })
		if i < 0 {
			s.add(gpu, fmt.Sprintf("profile id %d (%s)", info.Id, np.name), "(not in the catalog)", describe(np), Differs, "")
			continue
		}
		seen = append(seen, i)
		compareProfile(s, gpu, model.Profiles[i], np)
	}
	for i, cp := range model.Profiles {
		if !slices.Contains(seen, i) && unreadable == 0 {
			s.add(gpu, "profile "+cp.Name, fmt.Sprintf("driver id %d", cp.DriverID), "(NVML does not list it)", Differs, "")
		}
	}
}

func compareProfile(s *Step, gpu string, cp mig.Profile, np nvmlProfile) {
	f := func(what string) string { return cp.Name + ": " + what }
	if np.name != "" {
		s.compare(gpu, f("name"), cp.Name, np.name)
	} else {
		s.add(gpu, f("name"), cp.Name, "", NotRead, "the driver's v2 profile info (which has the name) did not answer")
	}
	s.compare(gpu, f("memory (MiB)"), strconv.Itoa(cp.MemoryMiB), strconv.FormatUint(np.info.MemorySizeMB, 10))
	s.compare(gpu, f("compute slices"), strconv.Itoa(cp.ComputeSlices), strconv.FormatUint(uint64(np.info.SliceCount), 10))
	s.compare(gpu, f("instances per GPU"), strconv.Itoa(cp.MaxInstances), strconv.FormatUint(uint64(np.info.InstanceCount), 10))
	if np.placements != nil {
		s.compare(gpu, f("placements start:size"), placements(cp.Starts, cp.MemorySlots), nvmlPlacements(np.placements))
	}
	s.add(gpu, f("multiprocessors"), "", strconv.FormatUint(uint64(np.info.MultiprocessorCount), 10), Info, "the catalog keeps none; GFD's mig-<p>.multiprocessors label comes from the instance")
}

func (c *Config) profileName(d nvml.Device, p int) string {
	if c.ProfileName != nil {
		return c.ProfileName(d, p)
	}
	return ProfileName(d, p)
}

// ProfileName reads the driver's name for a profile index ("MIG 1g.18gb" →
// "1g.18gb") from NVML's v2 profile info; empty where it does not answer.
func ProfileName(d nvml.Device, p int) string {
	info, ret := d.GetGpuInstanceProfileInfoV(p).V2()
	if ret != nvml.SUCCESS {
		return ""
	}
	b := make([]byte, 0, len(info.Name))
	for _, c := range info.Name {
		if c == 0 {
			break
		}
		b = append(b, byte(c))
	}
	return strings.TrimPrefix(string(b), "MIG ")
}

func describe(np nvmlProfile) string {
	return fmt.Sprintf("%d MiB, %d slices, %d instances", np.info.MemorySizeMB, np.info.SliceCount, np.info.InstanceCount)
}

func placements(starts []int, size int) string {
	parts := make([]string, len(starts))
	for i, s := range starts {
		parts[i] = fmt.Sprintf("%d:%d", s, size)
	}
	return strings.Join(parts, " ")
}

func nvmlPlacements(ps []nvml.GpuInstancePlacement) string {
	parts := make([]string, len(ps))
	for i, p := range ps {
		parts[i] = fmt.Sprintf("%d:%d", p.Start, p.Size)
	}
	return strings.Join(parts, " ")
}
