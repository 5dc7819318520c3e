package share

import (
	"fmt"
	"slices"

	gpushare "github.com/gpuvc/gpuvc/gpu/share"
)

// Placement uses gpu/share's best fit: the reservation left with the least room
// afterwards, ties to the lowest name. The allocator is rebuilt (Restore) from
// the recorded shares for each pod, over the reservations that may still take
// one, so the team's pods-per-GPU bound is applied without touching the packer.

// fit finds the reservation for sp. It returns an error wrapping
// gpushare.ErrNoFit when no open reservation has room, and another error when
// the request is invalid for every reservation's GPU.
func (st *teamState) fit(sp *sharePod, maxPods int) (*reservation, int, error) {
	var gpus []gpushare.GPU
	var held []gpushare.Assignment
	for _, r := range st.reservations {
		if !r.open || len(r.shares) >= maxPods || r.used() >= gpushare.UnitsPerGPU {
			continue
		}
		mem := r.memMiB
		if mem <= 0 {
			if sp.req.MemoryMiB > 0 {
				continue // a memory share needs the GPU's size
			}
			mem = 1 // a fraction's units do not depend on it
		}
		gpus = append(gpus, gpushare.GPU{ID: r.name, MemoryMiB: mem})
		for _, s := range r.shares {
			held = append(held, gpushare.Assignment{Key: s.pod.Name, GPU: r.name, Units: s.units})
		}
	}
	a, err := gpushare.Restore(gpus, held)
	if err != nil {
		return nil, 0, fmt.Errorf("rebuilding the team's shares: %w", err)
	}
	as, err := a.Allocate(sp.pod.Name, sp.req)
	if err != nil {
		return nil, 0, err
	}
	return st.byName[as.GPU], as.Units, nil
}

// assign records a placement in memory; the reconciler writes it to the pod.
func (st *teamState) assign(sp *sharePod, r *reservation, units int) {
	sp.res, sp.units, sp.fresh = r, units, true
	r.shares = append(r.shares, sp)
}

// drop removes a reservation that could not be created; its shares go back to
// waiting and are returned.
func (st *teamState) drop(r *reservation) []*sharePod {
	st.reservations = slices.DeleteFunc(st.reservations, func(x *reservation) bool { return x == r })
	delete(st.byName, r.name)
	for _, sp := range r.shares {
		sp.res, sp.units, sp.fresh = nil, 0, false
	}
	shares := r.shares
	r.shares = nil
	return shares
}

// unschedulable returns a reservation the scheduler cannot place: another one
// would not be placed either, so none is created while it waits.
func (st *teamState) unschedulable() *reservation {
	for _, r := range st.reservations {
		if r.open && r.node == "" && r.unschedulable != "" {
			return r
		}
	}
	return nil
}

// unbound returns an open reservation the scheduler has yet to place.
func (st *teamState) unbound() *reservation {
	for _, r := range st.reservations {
		if r.open && r.node == "" {
			return r
		}
	}
	return nil
}

// summary describes the team's open reservations for messages: "2 shared GPUs,
// most free 0.4".
func (st *teamState) summary() string {
	n, free := 0, 0
	for _, r := range st.reservations {
		if r.open {
			n++
			free = max(free, gpushare.UnitsPerGPU-r.used())
		}
	}
	if n == 0 {
		return "the team holds no shared GPU"
	}
	return fmt.Sprintf("%d shared GPU(s) held, most free %s", n, portion(free))
}

// portion formats units as a decimal part of a GPU: 3000 → "0.3".
func portion(units int) string {
	s := fmt.Sprintf("%d.%04d", units/gpushare.UnitsPerGPU, units%gpushare.UnitsPerGPU)
	for s[len(s)-1] == '0' {
		s = s[:len(s)-1]
	}
	if s[len(s)-1] == '.' {
		s = s[:len(s)-1]
	}
	return s
}
