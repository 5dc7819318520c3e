package gpucheck

import (
	"context"
	"sort"
	"strconv"
	"strings"

	"github.com/gpuvc/gpuvc/api/contract"
	"github.com/gpuvc/gpuvc/gpu/inventory"
)

// gfdNotPublished are labels in GFD's documented set that the agent leaves
// out, and why.
var gfdNotPublished = map[string]string{
	"gfd.timestamp":        "changes on every run; the agent's labels stay put (and GFD's presence is detected by it)",
	"gpu.machine":          "the machine's DMI product name, not a GPU fact",
	"gpu.mode":             "display/compute mode of GRID boards",
	"gpu.clique":           "NVLink fabric (GB200 NVL) only",
	"gpu.imex-domain":      "NVLink fabric (GB200 NVL) only",
	"gpu.replicas":         "time-slicing/MPS replicas of the device plugin's sharing config; gpuvc shares through reservations",
	"gpu.sharing-strategy": "as gpu.replicas",
}

// labelsStep sets the labels the agent would publish (with GFD absent)
// beside the labels GFD documents, filled in from nvidia-smi.
func labelsStep(_ context.Context, c *Config, f *facts, s *Step) {
	s.Reference = "GPU Feature Discovery's documented labels (k8s-device-plugin docs/gpu-feature-discovery), values from nvidia-smi"
	if len(f.inv.GPUs) == 0 || len(f.smi.GPUs) == 0 {
		s.Err = "no inventory or nvidia-smi output from the first step"
		return
	}
	got, err := inventory.Labels(f.inv, c.Strategy)
	if err != nil {
		s.Err = "gpuvc's labels: " + err.Error()
		return
	}
	want := gfdLabels(f, c.Strategy)
	keys := make([]string, 0, len(want))
	for k := range want {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		s.compare("", k, got[k], want[k])
	}
	var extra []string
	for k := range got {
		if _, ok := want[k]; !ok {
			extra = append(extra, k)
		}
	}
	sort.Strings(extra)
	for _, k := range extra {
		s.add("", k, got[k], "(GFD would not set it)", Differs, "")
	}
	var skipped []string
	for k := range gfdNotPublished {
		skipped = append(skipped, k)
	}
	sort.Strings(skipped)
	for _, k := range skipped {
		s.add("", contract.NVIDIAPrefix+k, "(not published)", "(GFD sets it)", Info, gfdNotPublished[k])
	}
	s.note("strategy %s; with GFD running the agent writes no nvidia.com/ labels at all (--gfd=auto)", c.Strategy)
}

// gfdLabels are GFD's labels for this node from nvidia-smi's answers: MIG
// profile labels (mixed/single with MIG on) are left to the inventory test
// suite, since no MIG instance may be made on the machines this runs on.
func gfdLabels(f *facts, strategy inventory.Strategy) map[string]string {
	p := contract.NVIDIAPrefix
	g := f.smi.GPUs[0]
	l := map[string]string{
		p + "gpu.product": strings.Join(strings.Fields(g.Product), "-"),
		p + "gpu.count":   strconv.Itoa(f.smi.AttachedGPUs),
		p + "gpu.family":  strings.ToLower(strings.Join(strings.Fields(g.Architecture), "-")),
	}
	if total, err := mib(g.FB.Total); err == nil {
		l[p+"gpu.memory"] = strconv.FormatInt(total, 10)
	}
	capable := false
	for _, g := range f.smi.GPUs {
		c, _, _ := migFromSMI(g)
		capable = capable || c
	}
	l[p+"mig.capable"] = strconv.FormatBool(capable)
	if strategy != inventory.StrategyNone {
		l[p+"mig.strategy"] = string(strategy)
	}
	if parts := strings.Split(f.smi.DriverVersion, "."); len(parts) == 3 {
		l[p+"cuda.driver.major"], l[p+"cuda.driver.minor"], l[p+"cuda.driver.rev"] = parts[0], parts[1], parts[2]
	}
	if major, minor, ok := strings.Cut(f.smi.CUDAVersion, "."); ok {
		l[p+"cuda.runtime.major"], l[p+"cuda.runtime.minor"] = major, minor
	}
	if major, minor, ok := strings.Cut(f.computeCap[g.UUID], "."); ok {
		l[p+"gpu.compute.major"], l[p+"gpu.compute.minor"] = major, minor
	}
	return l
}
