package mig

import (
	"fmt"
	"math/bits"
	"slices"
)

// Instance is a GPU instance on one GPU: a profile placed at a start slot.
type Instance struct {
	Profile string `json:"profile"`
	Start   int    `json:"start"`
}

// gpuState is a single GPU's layout in index form, cheap to copy and test.
type gpuState struct {
	m       *Model
	occ     uint32 // bit s set: memory slot s is taken
	count   []int  // instances per profile index
	media   int    // "+me" instances
	compute int    // compute slices in use
}

func (m *Model) newState() gpuState {
	return gpuState{m: m, count: make([]int, len(m.Profiles))}
}

func (s gpuState) clone() gpuState {
	s.count = slices.Clone(s.count)
	return s
}

func mask(p Profile, start int) uint32 { return (1<<p.MemorySlots - 1) << start }

// can reports whether profile i may start at slot start (no allocation: it
// runs in the inner loops of the cost function and the search).
func (s *gpuState) can(i, start int) bool {
	p := &s.m.Profiles[i]
	return s.occ&mask(*p, start) == 0 && slices.Contains(p.Starts, start) &&
		s.count[i] < p.MaxInstances &&
		(!p.MediaExtensions || s.media < s.m.MaxMediaInstances) &&
		s.compute+p.ComputeSlices <= s.m.ComputeSlices
}

// fits is can with a reason: the broken rule, or "" when the placement is valid.
func (s *gpuState) fits(i, start int) string {
	if s.can(i, start) {
		return ""
	}
	p := s.m.Profiles[i]
	switch {
	case !slices.Contains(p.Starts, start):
		return fmt.Sprintf("start %d is not allowed (allowed: %v)", start, p.Starts)
	case s.occ&mask(p, start) != 0:
		return fmt.Sprintf("slots %d-%d overlap another instance", start, start+p.MemorySlots-1)
	case s.count[i] >= p.MaxInstances:
		return fmt.Sprintf("at most %d instance(s) per GPU", p.MaxInstances)
	case p.MediaExtensions && s.media >= s.m.MaxMediaInstances:
		return fmt.Sprintf("at most %d +me instance(s) per GPU", s.m.MaxMediaInstances)
	case s.compute+p.ComputeSlices > s.m.ComputeSlices:
		return fmt.Sprintf("needs %d compute slices, %d free", p.ComputeSlices, s.m.ComputeSlices-s.compute)
	}
	return ""
}

func (s *gpuState) add(i, start int) {
	p := s.m.Profiles[i]
	s.occ |= mask(p, start)
	s.count[i]++
	s.compute += p.ComputeSlices
	if p.MediaExtensions {
		s.media++
	}
}

func (s *gpuState) remove(i, start int) {
	p := s.m.Profiles[i]
	s.occ &^= mask(p, start)
	s.count[i]--
	s.compute -= p.ComputeSlices
	if p.MediaExtensions {
		s.media--
	}
}

// load builds the state of existing instances, rejecting invalid layouts.
func (m *Model) load(existing []Instance) (gpuState, error) {
	s := m.newState()
	for _, in := range existing {
		i := m.index(in.Profile)
		if i < 0 {
			_, err := m.Profile(in.Profile)
			return s, err
		}
		if why := s.fits(i, in.Start); why != "" {
			return s, fmt.Errorf("%s at start %d on %s: %s", in.Profile, in.Start, m.Name, why)
		}
		s.add(i, in.Start)
	}
	return s, nil
}

// Validate checks a GPU's instances against the model's placement rules.
func (m *Model) Validate(existing []Instance) error {
	_, err := m.load(existing)
	return err
}

// Starts lists where profile can start given the existing instances.
func (m *Model) Starts(existing []Instance, profile string) ([]int, error) {
	s, err := m.load(existing)
	if err != nil {
		return nil, err
	}
	i := m.index(profile)
	if i < 0 {
		_, err := m.Profile(profile)
		return nil, err
	}
	var out []int
	for _, st := range m.Profiles[i].Starts {
		if s.can(i, st) {
			out = append(out, st)
		}
	}
	return out, nil
}

// Place picks the start for profile that leaves the GPU least fragmented
// (see Cost); ties go to the lowest start. It errors when nothing fits.
func (m *Model) Place(existing []Instance, profile string) (Instance, error) {
	s, err := m.load(existing)
	if err != nil {
		return Instance{}, err
	}
	i := m.index(profile)
	if i < 0 {
		_, err := m.Profile(profile)
		return Instance{}, err
	}
	best, bestCost, found := -1, Cost{}, false
	var why []string
	for _, st := range m.Profiles[i].Starts {
		if !s.can(i, st) {
			why = append(why, s.fits(i, st))
			continue
		}
		s.add(i, st)
		c := s.cost()
		s.remove(i, st)
		if !found || c.Less(bestCost) {
			best, bestCost, found = st, c, true
		}
	}
	if !found {
		return Instance{}, fmt.Errorf("%s does not fit on this %s GPU: %v", profile, m.Name, slices.Compact(why))
	}
	return Instance{Profile: profile, Start: best}, nil
}

// Cost orders layouts: fewer GPUs, then fewer stranded slots, then free space
// kept in bigger placeable blocks. It is additive over GPUs.
type Cost struct {
	GPUs     int // GPUs with at least one instance
	Stranded int // free slots no profile of the model could still use
	// Spread is minus the sum, over used GPUs, of the square of the largest
	// profile size (in slots) that could still be placed: more negative is
	// better, as one big free block beats two small ones.
	Spread int
}

// Less orders costs lexicographically.
func (c Cost) Less(o Cost) bool {
	if c.GPUs != o.GPUs {
		return c.GPUs < o.GPUs
	}
	if c.Stranded != o.Stranded {
		return c.Stranded < o.Stranded
	}
	return c.Spread < o.Spread
}

// Plus adds two costs.
func (c Cost) Plus(o Cost) Cost {
	return Cost{GPUs: c.GPUs + o.GPUs, Stranded: c.Stranded + o.Stranded, Spread: c.Spread + o.Spread}
}

// cost of one GPU; an empty GPU costs nothing (it stays free for whole-GPU use).
func (s *gpuState) cost() Cost {
	if s.occ == 0 {
		return Cost{}
	}
	usable, largest := uint32(0), 0
	for i, p := range s.m.Profiles {
		for _, st := range p.Starts {
			if s.can(i, st) {
				usable |= mask(p, st)
				largest = max(largest, p.MemorySlots)
			}
		}
	}
	free := (uint32(1)<<s.m.Slots - 1) &^ s.occ
	return Cost{GPUs: 1, Stranded: bits.OnesCount32(free &^ usable), Spread: -largest * largest}
}

// Fragmentation returns the cost of one GPU's layout; Stranded is the
// fragmentation figure: free slots that no profile could use any more.
func (m *Model) Fragmentation(existing []Instance) (Cost, error) {
	s, err := m.load(existing)
	if err != nil {
		return Cost{}, err
	}
	return s.cost(), nil
}
