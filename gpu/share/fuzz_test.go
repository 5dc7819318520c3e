package share

import (
	"errors"
	"fmt"
	"math"
	"testing"
)

// FuzzAllocator drives the allocator with arbitrary operation streams and
// checks its invariants after each step and across Restore.
// Run: go test -fuzz FuzzAllocator ./gpu/share
func FuzzAllocator(f *testing.F) {
	f.Add([]byte{0, 128, 0, 0, 200, 1, 2, 0, 0, 3, 0, 0})
	f.Add([]byte{3, 1, 0, 1, 255, 255, 1, 10, 3, 2, 1, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		a, _ := New()
		var gpuList []GPU
		var keys []string
		for i := 0; i+2 < len(data); i += 3 {
			op, x, y := data[i]%4, data[i+1], data[i+2]
			switch op {
			case 0, 1: // allocate a fraction or a memory amount
				key := fmt.Sprintf("k%d", i)
				r := Fraction((float64(x) + float64(y)/256) / 256)
				if op == 1 {
					r = Memory(int64(x)<<8 | int64(y))
				}
				before := a.GPUs()
				as, err := a.Allocate(key, r)
				if err == nil {
					keys = append(keys, key)
					checkBestFit(t, before, as, r)
				} else if errors.Is(err, ErrNoFit) {
					for _, g := range before {
						if u, e := r.Units(g.MemoryMiB); e == nil && g.Used+u <= UnitsPerGPU {
							t.Fatalf("ErrNoFit although %s had room for %v", g.ID, r)
						}
					}
				}
			case 2: // release
				if len(keys) > 0 {
					j := int(x) % len(keys)
					if _, ok := a.Release(keys[j]); !ok {
						t.Fatalf("release %s failed", keys[j])
					}
					keys = append(keys[:j], keys[j+1:]...)
				}
			case 3: // add a GPU
				g := GPU{ID: fmt.Sprintf("g%03d", len(gpuList)), MemoryMiB: int64(x)<<8 | int64(y) + 1}
				if err := a.AddGPU(g); err != nil {
					t.Fatal(err)
				}
				gpuList = append(gpuList, g)
			}
			checkInvariants(t, a)
		}
		b, err := Restore(gpuList, a.Assignments())
		if err != nil {
			t.Fatal(err)
		}
		if len(b.Assignments()) != len(a.Assignments()) || b.InUse() != a.InUse() {
			t.Fatal("restore changed the state")
		}
	})
}

// FuzzFractionUnits: a valid fraction never gets less than it asked for (up
// to the float tolerance) and never more than one unit above it.
func FuzzFractionUnits(f *testing.F) {
	for _, v := range []float64{0.5, 0.3, 1e-12, 0.9999999, math.NaN(), 1, -0.1} {
		f.Add(v)
	}
	f.Fuzz(func(t *testing.T, v float64) {
		u, err := Fraction(v).Units(gib80)
		valid := v > 0 && v < 1 && !math.IsNaN(v)
		if valid != (err == nil) {
			t.Fatalf("Fraction(%v): err = %v", v, err)
		}
		if err != nil {
			return
		}
		got := float64(u) / UnitsPerGPU
		if u < 1 || u > UnitsPerGPU || got < v-1e-9 || got > v+1.0/UnitsPerGPU+1e-9 {
			t.Fatalf("Fraction(%v) = %d units", v, u)
		}
	})
}
