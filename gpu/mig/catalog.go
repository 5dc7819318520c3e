package mig

import (
	"fmt"
	"slices"
	"strings"
	"sync"
)

// Model is one MIG-capable GPU model and its profile catalog.
type Model struct {
	Name            string   // catalog key, e.g. "A100-80GB"
	Products        []string // product names as GPU Feature Discovery labels them
	MemoryMiB       int      // whole-GPU memory as NVML reports it (nvidia.com/gpu.memory)
	MemoryEstimated bool     // true when MemoryMiB was not observed on hardware
	Slots           int      // memory slots a GPU instance is placed on
	ComputeSlices   int      // compute slices of the whole GPU
	// MaxMediaInstances bounds "+me" instances per GPU: each model has a single
	// JPEG/OFA engine set, which every "+me" profile takes (user guide table).
	MaxMediaInstances int
	Profiles          []Profile

	once    sync.Once
	configs []config // every valid single-GPU layout content, see enumerate.go
	ext     sync.Map // uint64 layout key -> []config, see cachedExtensions
}

// Profile returns the model's profile with that exact name.
func (m *Model) Profile(name string) (Profile, error) {
	if i := m.index(name); i >= 0 {
		return m.Profiles[i], nil
	}
	return Profile{}, fmt.Errorf("%s offers no MIG profile %q; it offers %s", m.Name, name, m.profileList())
}

func (m *Model) index(name string) int {
	return slices.IndexFunc(m.Profiles, func(p Profile) bool { return p.Name == name })
}

func (m *Model) profileList() string {
	names := make([]string, len(m.Profiles))
	for i, p := range m.Profiles {
		names[i] = p.Name
	}
	return strings.Join(names, ", ")
}

// kind is a profile shape shared by every model with the same slot count.
type kind struct {
	compute, slots, max, driverID int
	starts                        []int
	me                            bool
}

// Shapes from the user guide's placement tables (nvidia-smi mig -lgipp).
// The order is the order of the memory columns in the model table below.
var (
	kinds8 = []kind{
		{compute: 1, slots: 1, max: 7, driverID: 19, starts: []int{0, 1, 2, 3, 4, 5, 6}},
		{compute: 1, slots: 1, max: 1, driverID: 20, starts: []int{0, 1, 2, 3, 4, 5, 6}, me: true},
		{compute: 1, slots: 2, max: 4, driverID: 15, starts: []int{0, 2, 4, 6}}, // 1g with double memory
		{compute: 2, slots: 2, max: 3, driverID: 14, starts: []int{0, 2, 4}},
		{compute: 3, slots: 4, max: 2, driverID: 9, starts: []int{0, 4}},
		{compute: 4, slots: 4, max: 1, driverID: 5, starts: []int{0}},
		{compute: 7, slots: 8, max: 1, driverID: 0, starts: []int{0}},
	}
	// A30 has 4 slots and its own driver ids (A30 lgip: 14, 21, 5, 6, 0).
	kindsA30 = []kind{
		{compute: 1, slots: 1, max: 4, driverID: 14, starts: []int{0, 1, 2, 3}},
		{compute: 1, slots: 1, max: 1, driverID: 21, starts: []int{0, 1, 2, 3}, me: true},
		{compute: 2, slots: 2, max: 2, driverID: 5, starts: []int{0, 2}},
		{compute: 2, slots: 2, max: 1, driverID: 6, starts: []int{0, 2}, me: true},
		{compute: 4, slots: 4, max: 1, driverID: 0, starts: []int{0}},
	}
)

// mem is one profile's memory: GB as named, MiB as NVML reports, and whether
// the MiB value is an estimate (2x the next smaller size: observed sizes grow
// by 2x plus 128-512 MiB, so this stays at or below the real value).
type mem struct {
	gb, mib int
	est     bool
}

func newModel(name string, products []string, gpuMiB int, gpuEst bool, ks []kind, mems []mem) *Model {
	m := &Model{Name: name, Products: products, MemoryMiB: gpuMiB, MemoryEstimated: gpuEst, MaxMediaInstances: 1}
	for i, k := range ks {
		n := ProfileName{ComputeSlices: k.compute, MemoryGB: mems[i].gb, MediaExtensions: k.me}
		m.Profiles = append(m.Profiles, Profile{
			Name: n.String(), ComputeSlices: k.compute, MemoryGB: mems[i].gb,
			MemoryMiB: mems[i].mib, MemoryEstimated: mems[i].est,
			MemorySlots: k.slots, Starts: k.starts, MaxInstances: k.max,
			MediaExtensions: k.me, DriverID: k.driverID,
		})
		m.ComputeSlices = max(m.ComputeSlices, k.compute)
		m.Slots = max(m.Slots, k.slots)
	}
	return m
}

// The catalog. MiB values marked est:true are not confirmed on hardware; see
// docs/gpu.md for the source of each number.
var catalog = []*Model{
	newModel("A100-40GB", []string{"NVIDIA-A100-SXM4-40GB", "NVIDIA-A100-PCIE-40GB"}, 40960, false, kinds8,
		[]mem{{5, 4864, false}, {5, 4864, false}, {10, 9856, false}, {10, 9856, false}, {20, 19968, false}, {20, 19968, false}, {40, 40192, false}}),
	newModel("A100-80GB", []string{"NVIDIA-A100-SXM4-80GB", "NVIDIA-A100-80GB-PCIe"}, 81920, false, kinds8,
		[]mem{{10, 9728, false}, {10, 9728, false}, {20, 19968, false}, {20, 19968, false}, {40, 40192, false}, {40, 40192, false}, {80, 80384, true}}),
	newModel("H100-80GB", []string{"NVIDIA-H100-80GB-HBM3", "NVIDIA-H100-PCIe"}, 81559, true, kinds8,
		[]mem{{10, 9984, false}, {10, 9984, false}, {20, 20096, false}, {20, 20096, false}, {40, 40192, true}, {40, 40192, true}, {80, 80384, true}}),
	newModel("H100-NVL-94GB", []string{"NVIDIA-H100-NVL"}, 95830, true, kinds8,
		[]mem{{12, 11008, false}, {12, 11008, false}, {24, 22144, false}, {24, 22144, false}, {47, 44288, true}, {47, 44288, true}, {94, 88576, true}}),
	// GH200's H100 has 96GB; no sizes were observed, so NVL's are the floor.
	newModel("H100-96GB", []string{"NVIDIA-GH200-480GB"}, 97280, true, kinds8,
		[]mem{{12, 11008, true}, {12, 11008, true}, {24, 22144, true}, {24, 22144, true}, {48, 44288, true}, {48, 44288, true}, {96, 88576, true}}),
	// H200: every size read from NVML's GPU-instance profile info on a real
	// H200 (driver 580.159.04, MIG off) by gpu-check, 2026-11-28 (docs/gpu.md).
	newModel("H200-141GB", []string{"NVIDIA-H200"}, 143771, false, kinds8,
		[]mem{{18, 16384, false}, {18, 16384, false}, {35, 33280, false}, {35, 33280, false}, {71, 71424, false}, {71, 71424, false}, {141, 143360, false}}),
	newModel("A30-24GB", []string{"NVIDIA-A30"}, 24576, false, kindsA30,
		[]mem{{6, 5952, false}, {6, 5952, false}, {12, 11968, false}, {12, 11968, false}, {24, 24000, false}}),
}

// Models returns the catalog in a stable order. Models are shared: treat
// them as read-only.
func Models() []*Model { return slices.Clone(catalog) }

// Lookup finds a model by its catalog name or by a product name as GPU Feature
// Discovery ("NVIDIA-A100-SXM4-40GB") or NVML ("NVIDIA A100-SXM4-40GB") report
// it. Case does not matter; a GFD single-strategy suffix "-MIG-<profile>" is ignored.
func Lookup(product string) (*Model, error) {
	key := normalizeProduct(product)
	for _, m := range catalog {
		if strings.EqualFold(key, m.Name) {
			return m, nil
		}
		for _, p := range m.Products {
			if strings.EqualFold(key, p) {
				return m, nil
			}
		}
	}
	var known []string
	for _, m := range catalog {
		known = append(known, fmt.Sprintf("%s (%s)", m.Name, strings.Join(m.Products, ", ")))
	}
	return nil, fmt.Errorf("unknown MIG GPU model %q; known models: %s", product, strings.Join(known, "; "))
}

// normalizeProduct turns NVML's spaced names into GFD's dashed form.
func normalizeProduct(s string) string {
	s = strings.Join(strings.Fields(s), "-")
	if i := strings.Index(strings.ToUpper(s), "-MIG-"); i >= 0 {
		s = s[:i]
	}
	return s
}
