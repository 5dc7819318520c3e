package mig

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// bruteLeaves bounds the exhaustive search the fuzz target compares with:
// (GPUs × slots)^items positions, so a run stays near a millisecond.
const bruteLeaves = 1 << 12

// FuzzPack lays random existing instances (kept only where the model's rules
// allow them) and a random request on 1 to 3 GPUs of a random catalog model.
// Checked against rules written from the catalog fields (bruteValid), not from
// gpuState: a refused existing instance breaks a rule and an accepted one none;
// Pack's plan never overlaps slices, starts only where the profile may, stays
// within the GPU's slots, compute slices, memory and per-profile limits, keeps
// the existing instances and adds exactly the request; Pack succeeds exactly
// when exhaustive search finds a layout (small inputs) and then at its cost;
// Place picks an allowed free start, and fails only when no start is free.
// Seeds: testdata/fuzz/FuzzPack. Run: go test -run '^$' -fuzz FuzzPack ./gpu/mig/
func FuzzPack(f *testing.F) {
	f.Add(uint8(0), uint8(0), []byte{}, []byte{0, 0, 1})
	f.Add(uint8(1), uint8(1), []byte{0, 3, 4, 1, 0, 6}, []byte{2, 2, 5})
	f.Add(uint8(4), uint8(2), []byte{0, 1, 3, 0, 1, 3, 2, 0, 9}, []byte{0, 7, 7, 7})
	f.Add(uint8(7), uint8(1), []byte{1, 4, 0}, []byte{3, 1})
	f.Fuzz(func(t *testing.T, model, gpus uint8, existingBytes, requestBytes []byte) {
		models := Models()
		m := models[int(model)%len(models)]
		n := 1 + int(gpus)%3
		existing := make([][]Instance, n)
		for i := 0; i+2 < len(existingBytes) && i < 3*16; i += 3 {
			g := int(existingBytes[i]) % n
			p := m.Profiles[int(existingBytes[i+1])%len(m.Profiles)]
			in := Instance{Profile: p.Name, Start: int(existingBytes[i+2]) % (m.Slots + 2)}
			next := append(slices.Clone(existing[g]), in)
			err := m.Validate(next)
			if valid := bruteValid(m, next); valid != (err == nil) {
				t.Fatalf("%s: Validate(%v) = %v, the catalog's rules say valid=%v", m.Name, next, err, valid)
			}
			if err == nil {
				existing[g] = next
			}
		}
		var req []string
		for _, b := range requestBytes[:min(len(requestBytes), 6)] {
			req = append(req, m.Profiles[int(b)%len(m.Profiles)].Name)
		}

		plan, err := m.Pack(existing, slices.Clone(req))
		if err == nil {
			checkPlan(t, m, existing, req, plan)
			for g, l := range plan.Layouts {
				checkMemory(t, m, g, l)
			}
		}
		if leaves(m, n, len(req)) <= bruteLeaves {
			want, ok := bruteForce(m, existing, slices.Clone(req))
			switch {
			case ok && err != nil:
				t.Fatalf("%s %v on %v: Pack failed (%v), exhaustive search fits it at %+v", m.Name, req, existing, err, want)
			case !ok && err == nil:
				t.Fatalf("%s %v on %v: Pack placed %v, exhaustive search finds no layout", m.Name, req, existing, plan.Added)
			case ok && plan.Optimal:
				if d := cmp.Diff(want, plan.Cost); d != "" {
					t.Fatalf("%s %v on %v: cost -exhaustive +Pack:\n%s", m.Name, req, existing, d)
				}
			}
		}
		if len(req) > 0 {
			checkPlace(t, m, existing[0], req[0])
		}
	})
}

// leaves is the size of bruteForce's search: positions per item to the items.
func leaves(m *Model, gpus, items int) int {
	n := 1
	for range items {
		n *= gpus * m.Slots
		if n > bruteLeaves {
			break
		}
	}
	return n
}

// checkMemory: the instances of one GPU never hold more memory than it has.
func checkMemory(t *testing.T, m *Model, g int, l []Instance) {
	t.Helper()
	mib := 0
	for _, in := range l {
		p, _ := m.Profile(in.Profile)
		mib += p.MemoryMiB
	}
	if mib > m.MemoryMiB {
		t.Fatalf("%s GPU %d: layout %v holds %d MiB, the GPU has %d", m.Name, g, l, mib, m.MemoryMiB)
	}
}

// checkPlace: Place's start is allowed, free and valid; it fails only when
// no start of the profile keeps the layout valid.
func checkPlace(t *testing.T, m *Model, l []Instance, profile string) {
	t.Helper()
	p, _ := m.Profile(profile)
	var free []int
	for _, st := range p.Starts {
		if bruteValid(m, append(slices.Clone(l), Instance{profile, st})) {
			free = append(free, st)
		}
	}
	in, err := m.Place(l, profile)
	switch {
	case err != nil && len(free) > 0:
		t.Fatalf("%s: Place(%v, %s) failed (%v), starts %v are free", m.Name, l, profile, err, free)
	case err == nil && !slices.Contains(free, in.Start):
		t.Fatalf("%s: Place(%v, %s) chose start %d, allowed and free: %v", m.Name, l, profile, in.Start, free)
	}
	if starts, err := m.Starts(l, profile); err != nil || !slices.Equal(starts, free) {
		t.Fatalf("%s: Starts(%v, %s) = %v, %v; allowed and free: %v", m.Name, l, profile, starts, err, free)
	}
}
