package mig

import (
	"cmp"
	"fmt"
	"slices"
)

// Request asks for a MIG slice without naming a model's profile.
type Request struct {
	// Profile is a profile name from any model, e.g. "1g.10gb"; when set,
	// ComputeSlices and MemoryGB come from the name and MemoryMiB is ignored.
	Profile string
	// ComputeSlices and MemoryMiB are the minimum compute and memory wanted.
	ComputeSlices int
	MemoryMiB     int
	// MediaExtensions asks for the JPEG/OFA engines ("+me", or a whole GPU).
	MediaExtensions bool
}

// Map returns the smallest profile of m that satisfies r: fewest memory slots,
// then fewest compute slices, then least memory, then a plain profile before
// its "+me" twin. A profile name is matched on its named GB (names are what
// users compare); explicit requests on MemoryMiB as NVML reports it.
func (m *Model) Map(r Request) (Profile, error) {
	want, memOK, err := r.needs()
	if err != nil {
		return Profile{}, err
	}
	var fits []Profile
	for _, p := range m.Profiles {
		if p.ComputeSlices < want.ComputeSlices || !memOK(p) {
			continue
		}
		// Only "+me" profiles and the whole GPU carry the media engines.
		if want.MediaExtensions && !p.MediaExtensions && p.MemorySlots < m.Slots {
			continue
		}
		fits = append(fits, p)
	}
	if len(fits) == 0 {
		return Profile{}, fmt.Errorf("%s offers no MIG profile with at least %s; it offers %s", m.Name, r.describe(), m.profileList())
	}
	return slices.MinFunc(fits, func(a, b Profile) int {
		return cmp.Or(
			cmp.Compare(a.MemorySlots, b.MemorySlots),
			cmp.Compare(a.ComputeSlices, b.ComputeSlices),
			cmp.Compare(a.MemoryMiB, b.MemoryMiB),
			compareBool(a.MediaExtensions != want.MediaExtensions, b.MediaExtensions != want.MediaExtensions),
		)
	}), nil
}

func compareBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case !a:
		return -1
	}
	return 1
}

// needs validates r and returns what it asks for and its memory test.
func (r Request) needs() (ProfileName, func(Profile) bool, error) {
	if r.Profile != "" {
		n, err := ParseProfileName(r.Profile)
		if err != nil {
			return n, nil, err
		}
		n.MediaExtensions = n.MediaExtensions || r.MediaExtensions
		return n, func(p Profile) bool { return p.MemoryGB >= n.MemoryGB }, nil
	}
	if r.ComputeSlices < 1 {
		return ProfileName{}, nil, fmt.Errorf("MIG request needs at least 1 compute slice, got %d", r.ComputeSlices)
	}
	if r.MemoryMiB < 0 {
		return ProfileName{}, nil, fmt.Errorf("MIG request memory %d MiB is negative", r.MemoryMiB)
	}
	n := ProfileName{ComputeSlices: r.ComputeSlices, MediaExtensions: r.MediaExtensions}
	return n, func(p Profile) bool { return p.MemoryMiB >= r.MemoryMiB }, nil
}

func (r Request) describe() string {
	s := ""
	if r.Profile != "" {
		n, _ := ParseProfileName(r.Profile)
		s = fmt.Sprintf("%d compute slice(s) and %d GB (%s)", n.ComputeSlices, n.MemoryGB, r.Profile)
	} else {
		s = fmt.Sprintf("%d compute slice(s) and %d MiB", r.ComputeSlices, r.MemoryMiB)
	}
	if r.MediaExtensions {
		s += " with media extensions"
	}
	return s
}
