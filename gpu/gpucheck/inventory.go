package gpucheck

import (
	"context"
	"strconv"
	"strings"

	"github.com/gpuvc/gpuvc/gpu/inventory"
)

// inventoryStep sets the agent's inventory beside nvidia-smi -q -x (and
// --query-gpu=compute_cap, which the XML does not carry).
func inventoryStep(ctx context.Context, c *Config, f *facts, s *Step) {
	s.Reference = "nvidia-smi -q -x; compute capability from nvidia-smi --query-gpu=uuid,compute_cap"
	inv, err := inventory.NVML{Lib: c.Lib}.Inventory()
	if err != nil {
		s.Err = "gpuvc's inventory: " + err.Error()
		return
	}
	f.inv = inv
	raw, err := c.SMI.XML(ctx)
	if err != nil {
		s.Err = err.Error()
		return
	}
	if f.smi, err = parseXML(raw); err != nil {
		s.Err = err.Error()
		return
	}
	f.computeCap = map[string]string{}
	if rows, err := c.SMI.Query(ctx, "uuid", "compute_cap"); err != nil {
		s.note("compute capability not read from nvidia-smi: %v", err)
	} else {
		for _, r := range rows {
			f.computeCap[r["uuid"]] = r["compute_cap"]
		}
	}
	s.compare("", "driver version", inv.DriverVersion, f.smi.DriverVersion)
	s.compare("", "CUDA version", inv.CUDAVersion, f.smi.CUDAVersion)
	s.compare("", "GPU count", strconv.Itoa(len(inv.GPUs)), strconv.Itoa(f.smi.AttachedGPUs))
	for _, g := range inv.GPUs {
		name := gpuName(g.Index)
		ref, ok := f.smiGPU(g.UUID)
		if !ok {
			s.add(name, "UUID", g.UUID, "(nvidia-smi lists no GPU with it)", Differs, "")
			continue
		}
		s.compare(name, "UUID", g.UUID, ref.UUID)
		s.compare(name, "model", g.Product, ref.Product)
		total, err := mib(ref.FB.Total)
		if err != nil {
			s.add(name, "memory (MiB)", strconv.FormatInt(g.MemoryMiB, 10), ref.FB.Total, NotRead, err.Error())
		} else {
			s.compare(name, "memory (MiB)", strconv.FormatInt(g.MemoryMiB, 10), strconv.FormatInt(total, 10))
		}
		// NVML and nvidia-smi print the bus id alike; case is not meaningful.
		s.compare(name, "PCI bus", strings.ToUpper(g.PCIBusID), strings.ToUpper(ref.PCI.BusID))
		capable, enabled, pending := migFromSMI(ref)
		s.compare(name, "MIG capable", strconv.FormatBool(g.MIG.Capable), strconv.FormatBool(capable))
		s.compare(name, "MIG enabled", strconv.FormatBool(g.MIG.Enabled), strconv.FormatBool(enabled))
		s.compare(name, "MIG pending", strconv.FormatBool(g.MIG.Pending), strconv.FormatBool(pending))
		if cc, ok := f.computeCap[g.UUID]; ok {
			s.compare(name, "compute capability", g.ComputeCapability, cc)
		} else {
			s.add(name, "compute capability", g.ComputeCapability, "", NotRead, "nvidia-smi did not print compute_cap")
		}
	}
}

// smiGPU finds nvidia-smi's GPU with a UUID.
func (f *facts) smiGPU(uuid string) (smiGPU, bool) {
	for _, g := range f.smi.GPUs {
		if g.UUID == uuid {
			return g, true
		}
	}
	return smiGPU{}, false
}

// migFromSMI reads nvidia-smi's MIG mode: "N/A" on GPUs without MIG.
func migFromSMI(g smiGPU) (capable, enabled, pending bool) {
	cur := strings.TrimSpace(g.MIGMode.Current)
	capable = cur != "" && !strings.EqualFold(cur, "N/A")
	return capable, strings.EqualFold(cur, "Enabled"), strings.EqualFold(strings.TrimSpace(g.MIGMode.Pending), "Enabled")
}
