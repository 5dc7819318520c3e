package inventory

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"

	"github.com/gpuvc/gpuvc/gpu/mig"
)

// Spec declares a simulated node's GPUs.
type Spec struct {
	// Product is a GFD or NVML product name, or a catalog model name.
	Product string `json:"product"`
	Count   int    `json:"count"`
	// MIG is the layout per GPU: one entry for all GPUs, or one per GPU.
	// Each is "" or "all-disabled" (MIG off), "all-enabled" (MIG on, no
	// instances), "all-balanced", "all-<profile>" (as many as fit), or a
	// comma list of profiles with optional counts: "2x1g.10gb,3g.40gb".
	MIG []string `json:"mig,omitempty"`
	// MemoryMiB is needed only for products outside the MIG catalog.
	MemoryMiB int64 `json:"memoryMiB,omitempty"`
	// Seed makes UUIDs unique per node (use the node name).
	Seed string `json:"seed,omitempty"`
	// DRA is how many of the GPUs, the last ones, are served through Dynamic
	// Resource Allocation instead of the device plugin (GPU.DRA); 0 to Count.
	DRA int `json:"dra,omitempty"`
}

var _ Source = Spec{}

// Flag renders the spec as `gpuvc agent --simulate` reads it, e.g.
// "product=NVIDIA-A100-SXM4-80GB,count=4,seed=n,mig=all-disabled;all-balanced".
func (s Spec) Flag() string {
	parts := []string{"product=" + s.Product, "count=" + strconv.Itoa(s.Count)}
	if s.MemoryMiB > 0 {
		parts = append(parts, "memory="+strconv.FormatInt(s.MemoryMiB, 10))
	}
	if s.Seed != "" {
		parts = append(parts, "seed="+s.Seed)
	}
	if s.DRA > 0 {
		parts = append(parts, "dra="+strconv.Itoa(s.DRA))
	}
	if len(s.MIG) > 0 { // last: a layout may contain commas
		parts = append(parts, "mig="+strings.Join(s.MIG, ";"))
	}
	return strings.Join(parts, ",")
}

// Inventory simulates the spec; see Simulate.
func (s Spec) Inventory() (Inventory, error) { return Simulate(s) }

// Simulate builds a valid inventory from a spec: layouts are placed with the
// catalog's placement rules (mig.Model.Pack) and UUIDs are deterministic
// ("GPU-sim-…", "MIG-sim-…") so repeated runs publish the same inventory.
func Simulate(s Spec) (Inventory, error) {
	if s.Count < 0 {
		return Inventory{}, fmt.Errorf("simulated GPU count %d is negative", s.Count)
	}
	if s.DRA < 0 || s.DRA > s.Count {
		return Inventory{}, fmt.Errorf("%d GPUs served through DRA of %d simulated: want 0 to %d", s.DRA, s.Count, s.Count)
	}
	if len(s.MIG) > 1 && len(s.MIG) != s.Count {
		return Inventory{}, fmt.Errorf("%d MIG layouts for %d GPUs: give one for all or one per GPU", len(s.MIG), s.Count)
	}
	model, lookupErr := mig.Lookup(s.Product)
	prod, memMiB := s.Product, s.MemoryMiB
	if model != nil {
		if strings.EqualFold(model.Name, normalize(s.Product)) {
			prod = model.Products[0] // a catalog name: report a real product name
		}
		if memMiB == 0 {
			memMiB = int64(model.MemoryMiB)
		}
	}
	if memMiB <= 0 {
		return Inventory{}, fmt.Errorf("simulated product %q is not in the MIG catalog: set its memoryMiB", s.Product)
	}
	inv := Inventory{Simulated: true, GPUs: []GPU{}}
	for i := range s.Count {
		layout := ""
		if len(s.MIG) == 1 {
			layout = s.MIG[0]
		} else if len(s.MIG) > 1 {
			layout = s.MIG[i]
		}
		g := GPU{Index: i, UUID: simUUID("GPU", s.Seed, i), Product: prod, MemoryMiB: memMiB, MIG: MIG{Capable: model != nil},
			DRA: i >= s.Count-s.DRA}
		if layout != "" && layout != "all-disabled" {
			if model == nil {
				return Inventory{}, fmt.Errorf("GPU %d: MIG layout %q: %w", i, layout, lookupErr)
			}
			instances, err := simInstances(model, layout, s.Seed, i)
			if err != nil {
				return Inventory{}, fmt.Errorf("GPU %d: %w", i, err)
			}
			g.MIG.Enabled, g.MIG.Pending, g.MIG.Instances = true, true, instances
		}
		inv.GPUs = append(inv.GPUs, g)
	}
	return inv, nil
}

func normalize(s string) string { return strings.Join(strings.Fields(s), "-") }

// simInstances lays out one GPU; GI ids count from 1 in placement order
// (the driver's ids differ; nothing should depend on them).
func simInstances(m *mig.Model, layout, seed string, gpu int) ([]GPUInstance, error) {
	req, err := layoutRequest(m, layout)
	if err != nil {
		return nil, err
	}
	plan, err := m.Pack([][]mig.Instance{nil}, req)
	if err != nil {
		return nil, fmt.Errorf("MIG layout %q: %w", layout, err)
	}
	var out []GPUInstance
	for k, in := range plan.Layouts[0] {
		p, _ := m.Profile(in.Profile)
		id := k + 1
		out = append(out, GPUInstance{
			ID: id, Profile: p.Name, ProfileID: p.DriverID, Start: in.Start, Size: p.MemorySlots,
			MemoryMiB: int64(p.MemoryMiB),
			Devices:   []MIGDevice{{UUID: simUUID("MIG", seed, gpu, id), ComputeInstanceID: 0}},
		})
	}
	return out, nil
}

// layoutRequest expands a layout name into the profiles it asks for.
func layoutRequest(m *mig.Model, layout string) ([]string, error) {
	switch {
	case layout == "all-enabled":
		return nil, nil
	case layout == "all-balanced":
		return balanced(m), nil
	case strings.HasPrefix(layout, "all-"):
		p, err := m.Profile(strings.TrimPrefix(layout, "all-"))
		if err != nil {
			return nil, fmt.Errorf("MIG layout %q: %w", layout, err)
		}
		return repeat(p.Name, p.MaxInstances), nil
	}
	var req []string
	for _, part := range strings.Split(layout, ",") {
		part = strings.TrimSpace(part)
		n, name := 1, part
		if c, rest, ok := strings.Cut(part, "x"); ok {
			v, err := strconv.Atoi(c)
			if err != nil || v < 1 {
				return nil, fmt.Errorf("MIG layout %q: bad count in %q", layout, part)
			}
			n, name = v, rest
		}
		if _, err := m.Profile(name); err != nil {
			return nil, fmt.Errorf("MIG layout %q: %w", layout, err)
		}
		req = append(req, repeat(name, n)...)
	}
	return req, nil
}

// balanced is mig-parted's all-balanced: two small 1g, one 2g and (on 8-slot
// GPUs) one 3g, e.g. 2x1g.5gb + 2g.10gb + 3g.20gb on A100-40GB.
func balanced(m *mig.Model) []string {
	var req []string
	for _, p := range m.Profiles {
		switch {
		case p.MediaExtensions:
		case p.ComputeSlices == 1 && p.MemorySlots == 1:
			req = append(req, p.Name, p.Name)
		case p.ComputeSlices == 2, p.ComputeSlices == 3:
			req = append(req, p.Name)
		}
	}
	return req
}

func repeat(s string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = s
	}
	return out
}

// simUUID is a stable UUID-shaped id: kind-sim-<hash of seed and indexes>.
func simUUID(kind, seed string, idx ...int) string {
	sum := sha256.Sum256([]byte(fmt.Sprintf("%s/%s/%v", kind, seed, idx)))
	h := hex.EncodeToString(sum[:16])
	return fmt.Sprintf("%s-sim-%s-%s-%s-%s-%s", kind, h[0:8], h[8:12], h[12:16], h[16:20], h[20:32])
}
