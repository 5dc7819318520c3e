package nodeagent

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/gpuvc/gpuvc/gpu/inventory"
)

// Keys of a --simulate spec.
const (
	specProduct = "product"
	specCount   = "count"
	specMIG     = "mig"
	specMemory  = "memory"
	specSeed    = "seed"
	specDRA     = "dra"
)

var specKeys = []string{specProduct, specCount, specMIG, specMemory, specSeed, specDRA}

// ParseSpec parses a simulated node's GPUs written as comma-separated
// key=value pairs, e.g. "product=NVIDIA-A100-SXM4-80GB,count=8,mig=all-balanced".
//
// Keys: product (required), count (required, ≥ 1), mig (a layout for every
// GPU, or one layout per GPU separated by ";"), memory (MiB, for products
// outside the MIG catalog), seed (makes UUIDs unique; empty means the caller's
// default, e.g. the node name), dra (how many of the GPUs, the last ones, are
// served through DRA instead of the device plugin). A mig layout may itself contain commas
// ("mig=2x1g.10gb,3g.40gb"): a part without "=" continues the mig value.
// Errors name the offending part. The spec is checked by simulating it.
func ParseSpec(s string) (inventory.Spec, error) {
	var spec inventory.Spec
	if strings.TrimSpace(s) == "" {
		return spec, fmt.Errorf("empty simulated GPU spec: want e.g. %q", "product=NVIDIA-A100-SXM4-80GB,count=8")
	}
	values := map[string]string{}
	last := ""
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		key, value, ok := strings.Cut(part, "=")
		if !ok {
			if last != specMIG {
				return spec, fmt.Errorf("%q is not key=value (keys: %s)", part, strings.Join(specKeys, ", "))
			}
			values[specMIG] += "," + part
			continue
		}
		key = strings.TrimSpace(key)
		if !slices.Contains(specKeys, key) {
			return spec, fmt.Errorf("unknown key %q in %q (keys: %s)", key, part, strings.Join(specKeys, ", "))
		}
		if _, dup := values[key]; dup {
			return spec, fmt.Errorf("key %q given twice", key)
		}
		values[key] = strings.TrimSpace(value)
		last = key
	}

	spec.Product = values[specProduct]
	if spec.Product == "" {
		return spec, fmt.Errorf("missing product=<GFD or NVML product name>, e.g. product=NVIDIA-A100-SXM4-80GB")
	}
	countStr, ok := values[specCount]
	if !ok {
		return spec, fmt.Errorf("missing count=<number of GPUs>")
	}
	n, err := strconv.Atoi(countStr)
	if err != nil || n < 1 {
		return spec, fmt.Errorf("count %q is not a positive number of GPUs", countStr)
	}
	spec.Count = n
	if m, ok := values[specMemory]; ok {
		mib, err := strconv.ParseInt(m, 10, 64)
		if err != nil || mib < 1 {
			return spec, fmt.Errorf("memory %q is not a positive number of MiB", m)
		}
		spec.MemoryMiB = mib
	}
	if m := values[specMIG]; m != "" {
		for _, layout := range strings.Split(m, ";") {
			layout = strings.TrimSpace(layout)
			if layout == "" {
				return spec, fmt.Errorf("mig %q has an empty layout", m)
			}
			spec.MIG = append(spec.MIG, layout)
		}
	}
	if d, ok := values[specDRA]; ok {
		n, err := strconv.Atoi(d)
		if err != nil || n < 0 || n > spec.Count {
			return spec, fmt.Errorf("dra %q is not a number of GPUs from 0 to count (%d)", d, spec.Count)
		}
		spec.DRA = n
	}
	spec.Seed = values[specSeed]
	if _, err := inventory.Simulate(spec); err != nil {
		return spec, err
	}
	return spec, nil
}
