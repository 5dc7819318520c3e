package share

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
)

// ErrNoFit means no shared GPU has room for the request; the caller adds a
// shared GPU (AddGPU) and tries again.
var ErrNoFit = errors.New("no shared GPU has room")

// maxGPUMiB bounds GPU memory so unit arithmetic cannot overflow.
const maxGPUMiB = 1 << 40

// GPU is one shared GPU of a team.
type GPU struct {
	ID        string `json:"id"`
	MemoryMiB int64  `json:"memoryMiB"`
}

// Assignment records that the request Key holds Units on GPU.
type Assignment struct {
	Key   string `json:"key"`
	GPU   string `json:"gpu"`
	Units int    `json:"units"`
}

// Usage is one GPU's state.
type Usage struct {
	GPU
	Used int `json:"used"` // units taken, at most UnitsPerGPU
}

// Allocator is an online best-fit packer over a team's shared GPUs. It is
// deterministic and not safe for concurrent use.
type Allocator struct {
	gpus  []Usage // sorted by ID: ties go to the lowest ID
	byKey map[string]Assignment
}

// New returns an allocator over empty GPUs.
func New(gpus ...GPU) (*Allocator, error) {
	a := &Allocator{byKey: map[string]Assignment{}}
	for _, g := range gpus {
		if err := a.AddGPU(g); err != nil {
			return nil, err
		}
	}
	return a, nil
}

// Restore rebuilds an allocator from its GPUs and existing assignments (for
// example after a restart), rejecting any state the allocator could not have
// produced.
func Restore(gpus []GPU, assignments []Assignment) (*Allocator, error) {
	a, err := New(gpus...)
	if err != nil {
		return nil, err
	}
	for _, as := range assignments {
		if _, dup := a.byKey[as.Key]; dup {
			return nil, fmt.Errorf("assignment %q appears twice", as.Key)
		}
		i, ok := a.find(as.GPU)
		if !ok {
			return nil, fmt.Errorf("assignment %q is on unknown GPU %q", as.Key, as.GPU)
		}
		if as.Units < 1 || as.Units > UnitsPerGPU {
			return nil, fmt.Errorf("assignment %q has %d units; must be 1..%d", as.Key, as.Units, UnitsPerGPU)
		}
		if a.gpus[i].Used+as.Units > UnitsPerGPU {
			return nil, fmt.Errorf("assignment %q overfills GPU %q: %d + %d units > %d",
				as.Key, as.GPU, a.gpus[i].Used, as.Units, UnitsPerGPU)
		}
		a.take(i, as)
	}
	return a, nil
}

func (a *Allocator) find(id string) (int, bool) {
	return slices.BinarySearchFunc(a.gpus, id, func(u Usage, id string) int { return cmp.Compare(u.ID, id) })
}

func (a *Allocator) take(i int, as Assignment) {
	a.gpus[i].Used += as.Units
	a.byKey[as.Key] = as
}

// AddGPU adds an empty shared GPU.
func (a *Allocator) AddGPU(g GPU) error {
	if g.ID == "" {
		return errors.New("shared GPU needs an ID")
	}
	if g.MemoryMiB <= 0 || g.MemoryMiB > maxGPUMiB {
		return fmt.Errorf("shared GPU %q memory %d MiB must be 1..%d", g.ID, g.MemoryMiB, int64(maxGPUMiB))
	}
	i, ok := a.find(g.ID)
	if ok {
		return fmt.Errorf("shared GPU %q already exists", g.ID)
	}
	a.gpus = slices.Insert(a.gpus, i, Usage{GPU: g})
	return nil
}

// RemoveGPU removes an empty shared GPU.
func (a *Allocator) RemoveGPU(id string) error {
	i, ok := a.find(id)
	if !ok {
		return fmt.Errorf("shared GPU %q does not exist", id)
	}
	if a.gpus[i].Used > 0 {
		return fmt.Errorf("shared GPU %q still holds %d units", id, a.gpus[i].Used)
	}
	a.gpus = slices.Delete(a.gpus, i, i+1)
	return nil
}

// Allocate places the request under key on the GPU that it fits most tightly
// (least room left afterwards; ties to the lowest GPU ID). A key already
// placed with the same units gets its assignment back, so retries are safe.
// It returns an error wrapping ErrNoFit when no GPU has room, and a
// validation error when the request is invalid for every GPU.
func (a *Allocator) Allocate(key string, r Request) (Assignment, error) {
	if key == "" {
		return Assignment{}, errors.New("allocation needs a key")
	}
	if prev, ok := a.byKey[key]; ok {
		return a.retry(key, r, prev)
	}
	best, bestUnits, bestLeft := -1, 0, 0
	var lastErr error
	valid := false
	for i, g := range a.gpus {
		units, err := r.Units(g.MemoryMiB)
		if err != nil {
			lastErr = err
			continue
		}
		valid = true
		left := UnitsPerGPU - g.Used - units
		if left >= 0 && (best < 0 || left < bestLeft) {
			best, bestUnits, bestLeft = i, units, left
		}
	}
	switch {
	case len(a.gpus) == 0:
		if _, err := r.Units(maxGPUMiB); err != nil {
			return Assignment{}, err
		}
		return Assignment{}, fmt.Errorf("%v for %q: %w (there are no shared GPUs)", r, key, ErrNoFit)
	case !valid:
		return Assignment{}, fmt.Errorf("%q: %w", key, a.largestErr(r, lastErr))
	case best < 0:
		return Assignment{}, fmt.Errorf("%v for %q: %w (%d GPUs, most free %d/%d units)",
			r, key, ErrNoFit, len(a.gpus), a.mostFree(), UnitsPerGPU)
	}
	as := Assignment{Key: key, GPU: a.gpus[best].ID, Units: bestUnits}
	a.take(best, as)
	return as, nil
}

// retry answers a repeated Allocate for a key that is already placed.
func (a *Allocator) retry(key string, r Request, prev Assignment) (Assignment, error) {
	i, _ := a.find(prev.GPU)
	units, err := r.Units(a.gpus[i].MemoryMiB)
	if err != nil {
		return Assignment{}, err
	}
	if units != prev.Units {
		return Assignment{}, fmt.Errorf("%q already holds %d units on %q; release it before asking for %d", key, prev.Units, prev.GPU, units)
	}
	return prev, nil
}

// largestErr reports a memory request against the biggest GPU, so the
// message names the real limit.
func (a *Allocator) largestErr(r Request, err error) error {
	biggest := slices.MaxFunc(a.gpus, func(x, y Usage) int { return cmp.Compare(x.MemoryMiB, y.MemoryMiB) })
	if _, e := r.Units(biggest.MemoryMiB); e != nil {
		return e
	}
	return err
}

func (a *Allocator) mostFree() int {
	free := 0
	for _, g := range a.gpus {
		free = max(free, UnitsPerGPU-g.Used)
	}
	return free
}

// Release frees key's share; it reports whether key was placed.
func (a *Allocator) Release(key string) (Assignment, bool) {
	as, ok := a.byKey[key]
	if !ok {
		return Assignment{}, false
	}
	i, _ := a.find(as.GPU)
	a.gpus[i].Used -= as.Units
	delete(a.byKey, key)
	return as, true
}

// Lookup returns key's assignment.
func (a *Allocator) Lookup(key string) (Assignment, bool) {
	as, ok := a.byKey[key]
	return as, ok
}

// Assignments lists every assignment, by GPU then key: the state to persist.
func (a *Allocator) Assignments() []Assignment {
	out := make([]Assignment, 0, len(a.byKey))
	for _, as := range a.byKey {
		out = append(out, as)
	}
	slices.SortFunc(out, func(x, y Assignment) int { return cmp.Or(cmp.Compare(x.GPU, y.GPU), cmp.Compare(x.Key, y.Key)) })
	return out
}

// GPUs lists the shared GPUs and their use, by ID.
func (a *Allocator) GPUs() []Usage { return slices.Clone(a.gpus) }

// InUse counts GPUs holding at least one assignment.
func (a *Allocator) InUse() int {
	n := 0
	for _, g := range a.gpus {
		if g.Used > 0 {
			n++
		}
	}
	return n
}

// LowerBound is the fewest GPUs the current assignments could fit on.
func (a *Allocator) LowerBound() int {
	sum := 0
	for _, g := range a.gpus {
		sum += g.Used
	}
	return LowerBound(sum)
}
