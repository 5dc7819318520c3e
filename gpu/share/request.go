// Package share places fractional GPU requests (KAI-style gpu-fraction and
// gpu-memory) onto a team's shared GPUs.
//
// Capacity is counted in integer units of 1/UnitsPerGPU of a GPU, so sums
// never drift the way float fractions do; requests round up to a whole unit,
// so a pod never gets less than it asked for.
package share

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// UnitsPerGPU is the packing granularity: one unit is 1/10000 of a GPU
// (about 8 MiB of an 80 GB GPU).
const UnitsPerGPU = 10000

// Request is one pod's share: exactly one of Fraction (0 < f < 1, the
// gpu-fraction annotation) or MemoryMiB (> 0, the gpu-memory annotation).
type Request struct {
	Fraction  float64
	MemoryMiB int64
}

// Fraction and Memory build requests.
func Fraction(f float64) Request { return Request{Fraction: f} }
func Memory(mib int64) Request   { return Request{MemoryMiB: mib} }
func (r Request) isMemory() bool { return r.Fraction == 0 && r.MemoryMiB != 0 }
func (r Request) String() string {
	if r.isMemory() {
		return fmt.Sprintf("gpu-memory %d MiB", r.MemoryMiB)
	}
	return fmt.Sprintf("gpu-fraction %v", r.Fraction)
}

// fractionUnits validates a fraction and rounds it up to units. The small
// tolerance keeps binary float noise (0.3*10000 = 3000.0000000000005) from
// costing an extra unit.
func fractionUnits(f float64) (int, error) {
	switch {
	case math.IsNaN(f) || math.IsInf(f, 0):
		return 0, fmt.Errorf("gpu-fraction %v is not a finite number; it must be greater than 0 and less than 1", f)
	case f <= 0 || f >= 1:
		return 0, fmt.Errorf("gpu-fraction %v is out of range; it must be greater than 0 and less than 1", f)
	}
	return max(1, int(math.Ceil(f*UnitsPerGPU-1e-6))), nil
}

// memoryUnits rounds a memory request up to units of a GPU with gpuMiB.
func memoryUnits(mib, gpuMiB int64) (int, error) {
	if mib <= 0 {
		return 0, fmt.Errorf("gpu-memory %d MiB must be positive", mib)
	}
	if mib > gpuMiB {
		return 0, fmt.Errorf("gpu-memory %d MiB is more than the GPU's %d MiB", mib, gpuMiB)
	}
	return int((mib*UnitsPerGPU + gpuMiB - 1) / gpuMiB), nil
}

// Units converts r to units of a GPU with gpuMiB of memory.
func (r Request) Units(gpuMiB int64) (int, error) {
	if r.Fraction != 0 && r.MemoryMiB != 0 {
		return 0, fmt.Errorf("%v and gpu-memory %d MiB are exclusive: set one", r, r.MemoryMiB)
	}
	if r.isMemory() {
		return memoryUnits(r.MemoryMiB, gpuMiB)
	}
	return fractionUnits(r.Fraction)
}

// LowerBound is the fewest GPUs any packing of these unit counts needs:
// ceil(sum / UnitsPerGPU).
func LowerBound(units ...int) int {
	sum := 0
	for _, u := range units {
		sum += u
	}
	return (sum + UnitsPerGPU - 1) / UnitsPerGPU
}

// ParseRequest reads KAI-style annotation values: gpu-fraction ("0.5") or
// gpu-memory (MiB, "20480"); exactly one must be set. Errors name the value.
func ParseRequest(fraction, memoryMiB string) (Request, error) {
	switch {
	case fraction != "" && memoryMiB != "":
		return Request{}, fmt.Errorf("gpu-fraction %q and gpu-memory %q are exclusive: set one", fraction, memoryMiB)
	case fraction != "":
		f, err := strconv.ParseFloat(strings.TrimSpace(fraction), 64)
		if err != nil {
			return Request{}, fmt.Errorf("gpu-fraction %q is not a number", fraction)
		}
		r := Fraction(f)
		_, err = fractionUnits(f)
		return r, err
	case memoryMiB != "":
		m, err := strconv.ParseInt(strings.TrimSpace(memoryMiB), 10, 64)
		if err != nil {
			return Request{}, fmt.Errorf("gpu-memory %q is not a whole number of MiB", memoryMiB)
		}
		if m <= 0 {
			return Request{}, fmt.Errorf("gpu-memory %d MiB must be positive", m)
		}
		return Memory(m), nil
	}
	return Request{}, fmt.Errorf("neither gpu-fraction nor gpu-memory is set")
}
