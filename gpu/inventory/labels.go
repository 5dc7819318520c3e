package inventory

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/gpuvc/gpuvc/api/contract"
	"github.com/gpuvc/gpuvc/gpu/mig"
)

// Strategy is the device plugin's / GFD's MIG strategy.
type Strategy string

const (
	StrategyNone   Strategy = "none"   // whole GPUs only
	StrategySingle Strategy = "single" // every GPU one MIG profile, sold as nvidia.com/gpu
	StrategyMixed  Strategy = "mixed"  // nvidia.com/mig-<profile> per profile
)

// labelPrefix starts the label keys of NVIDIA's components.
const labelPrefix = contract.NVIDIAPrefix

// profileStat sums the MIG devices of one profile over a node.
type profileStat struct {
	devices  int64
	gi       GPUInstance
	resource string
}

func migProfiles(inv Inventory) (map[string]*profileStat, []string) {
	stats := map[string]*profileStat{}
	var order []string
	for _, g := range inv.GPUs {
		if !g.MIG.Enabled {
			continue
		}
		for _, gi := range g.MIG.Instances {
			s, ok := stats[gi.Profile]
			if !ok {
				s = &profileStat{gi: gi, resource: mig.ResourceName(gi.Profile)}
				stats[gi.Profile] = s
				order = append(order, gi.Profile)
			}
			s.devices += int64(len(gi.Devices))
		}
	}
	return stats, order
}

// product is the node's GPU product in GFD form (spaces become dashes); a
// node with several products is refused, as GFD labels one product.
func product(inv Inventory) (string, error) {
	p := ""
	for _, g := range inv.GPUs {
		name := strings.Join(strings.Fields(g.Product), "-")
		if p != "" && name != p {
			return "", fmt.Errorf("node mixes GPU products %q and %q", p, name)
		}
		p = name
	}
	return p, nil
}

// Labels returns the node labels GPU Feature Discovery would set for inv with
// strategy s: nvidia.com/gpu.{product,count,memory}, nvidia.com/mig.capable,
// where NVML told them nvidia.com/gpu.compute.{major,minor}, nvidia.com/gpu.family,
// nvidia.com/cuda.driver.{major,minor,rev} and nvidia.com/cuda.runtime.{major,minor},
// nvidia.com/mig.strategy (single and mixed) and, with mixed, per profile
// nvidia.com/mig-<profile>.{count,memory,slices.gi,slices.ci,multiprocessors}.
func Labels(inv Inventory, s Strategy) (map[string]string, error) {
	if len(inv.GPUs) == 0 {
		return map[string]string{}, nil
	}
	prod, err := product(inv)
	if err != nil {
		return nil, err
	}
	capable := false
	for _, g := range inv.GPUs {
		capable = capable || g.MIG.Capable
	}
	l := map[string]string{
		labelPrefix + "gpu.product": prod,
		labelPrefix + "gpu.count":   strconv.Itoa(len(inv.GPUs)),
		labelPrefix + "gpu.memory":  strconv.FormatInt(inv.GPUs[0].MemoryMiB, 10),
		labelPrefix + "mig.capable": strconv.FormatBool(capable),
	}
	versionLabels(l, inv)
	switch s {
	case StrategyNone:
		return l, nil
	case StrategySingle:
		profile, gi, n, err := single(inv)
		if err != nil {
			return nil, err
		}
		l[labelPrefix+"gpu.product"] = prod + "-MIG-" + profile
		l[labelPrefix+"gpu.count"] = strconv.FormatInt(n, 10)
		l[labelPrefix+"gpu.memory"] = strconv.FormatInt(gi.MemoryMiB, 10)
	case StrategyMixed:
		stats, order := migProfiles(inv)
		for _, name := range order {
			st := stats[name]
			key := strings.TrimPrefix(st.resource, labelPrefix)
			gi := strconv.Itoa(computeSlices(name))
			l[labelPrefix+key+".count"] = strconv.FormatInt(st.devices, 10)
			l[labelPrefix+key+".memory"] = strconv.FormatInt(st.gi.MemoryMiB, 10)
			l[labelPrefix+key+".slices.gi"] = gi
			l[labelPrefix+key+".slices.ci"] = gi // one full compute instance per GPU instance
			if st.gi.Multiprocessors > 0 {
				l[labelPrefix+key+".multiprocessors"] = strconv.Itoa(st.gi.Multiprocessors)
			}
		}
	default:
		return nil, fmt.Errorf("unknown MIG strategy %q: want none, single or mixed", s)
	}
	l[labelPrefix+"mig.strategy"] = string(s)
	return l, nil
}

func computeSlices(profile string) int {
	n, err := mig.ParseProfileName(profile)
	if err != nil {
		return 0
	}
	return n.ComputeSlices
}

// single checks the single strategy's precondition (every GPU MIG-enabled
// with one common profile) and returns that profile and its device count.
func single(inv Inventory) (string, GPUInstance, int64, error) {
	stats, order := migProfiles(inv)
	for _, g := range inv.GPUs {
		if !g.MIG.Enabled {
			return "", GPUInstance{}, 0, fmt.Errorf("strategy single needs MIG enabled on every GPU; GPU %d (%s) has it disabled", g.Index, g.UUID)
		}
	}
	if len(order) != 1 {
		return "", GPUInstance{}, 0, fmt.Errorf("strategy single needs one MIG profile on the node, found %d: %v", len(order), order)
	}
	st := stats[order[0]]
	return order[0], st.gi, st.devices, nil
}

// Capacity returns the extended resources the NVIDIA device plugin would
// advertise for inv with strategy s (resource name -> count). With mixed, a
// GPU in MIG mode adds one nvidia.com/mig-<profile> per MIG device and no
// nvidia.com/gpu; GPUs with MIG disabled count as nvidia.com/gpu. GPUs
// served through DRA (GPU.DRA) are not the device plugin's: left out.
func Capacity(inv Inventory, s Strategy) (map[string]int64, error) {
	inv, _ = SplitDRA(inv)
	c := map[string]int64{}
	switch s {
	case StrategyNone:
		if len(inv.GPUs) > 0 {
			c[contract.ResourceGPU] = int64(len(inv.GPUs))
		}
	case StrategySingle:
		if len(inv.GPUs) == 0 {
			return c, nil
		}
		_, _, n, err := single(inv)
		if err != nil {
			return nil, err
		}
		c[contract.ResourceGPU] = n
	case StrategyMixed:
		for _, g := range inv.GPUs {
			if !g.MIG.Enabled {
				c[contract.ResourceGPU]++
			}
		}
		stats, order := migProfiles(inv)
		for _, name := range order {
			if st := stats[name]; st.devices > 0 {
				c[st.resource] = st.devices
			}
		}
	default:
		return nil, fmt.Errorf("unknown MIG strategy %q: want none, single or mixed", s)
	}
	return c, nil
}

// versionLabels adds GFD's compute capability, architecture family, driver and
// CUDA labels for what the inventory knows (simulated inventories may not).
func versionLabels(l map[string]string, inv Inventory) {
	if parts := strings.Split(inv.DriverVersion, "."); len(parts) >= 2 {
		l[labelPrefix+"cuda.driver.major"] = parts[0]
		l[labelPrefix+"cuda.driver.minor"] = parts[1]
		if len(parts) > 2 {
			l[labelPrefix+"cuda.driver.rev"] = parts[2]
		}
	}
	if major, minor, ok := strings.Cut(inv.CUDAVersion, "."); ok {
		l[labelPrefix+"cuda.runtime.major"] = major
		l[labelPrefix+"cuda.runtime.minor"] = minor
	}
	major, minor, ok := strings.Cut(inv.GPUs[0].ComputeCapability, ".")
	if !ok {
		return
	}
	l[labelPrefix+"gpu.compute.major"] = major
	l[labelPrefix+"gpu.compute.minor"] = minor
	maj, err1 := strconv.Atoi(major)
	mnr, err2 := strconv.Atoi(minor)
	if err1 == nil && err2 == nil {
		l[labelPrefix+"gpu.family"] = Family(maj, mnr)
	}
}

// Family names a compute capability's architecture the way GFD labels
// nvidia.com/gpu.family ("hopper" for 9.0); "undefined" when unknown.
func Family(major, minor int) string {
	switch {
	case major == 3:
		return "kepler"
	case major == 5:
		return "maxwell"
	case major == 6:
		return "pascal"
	case major == 7 && minor < 5:
		return "volta"
	case major == 7:
		return "turing"
	case major == 8 && minor == 9:
		return "ada-lovelace"
	case major == 8:
		return "ampere"
	case major == 9:
		return "hopper"
	case major == 10 || major == 12:
		return "blackwell"
	}
	return "undefined"
}
