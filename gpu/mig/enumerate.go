package mig

// config is what one GPU can take on top of a base layout: the count of each
// profile added, the cheapest layout that realises it, and that layout's cost.
type config struct {
	add  []int
	inst []Instance
	cost Cost
}

// enumerate calls visit once for every valid layout that extends base,
// including base itself. It walks slots in order and at each free slot either
// leaves it free or starts an instance there, so no layout is seen twice.
func (m *Model) enumerate(base gpuState, visit func(s *gpuState, added []Instance)) {
	s := base.clone()
	var added []Instance
	var walk func(slot int)
	walk = func(slot int) {
		for slot < m.Slots && s.occ&(1<<slot) != 0 {
			slot++
		}
		if slot >= m.Slots {
			visit(&s, added)
			return
		}
		// Placing before skipping makes the first layout found for a content
		// (which wins ties) the one packed towards slot 0, as the driver does.
		for i, p := range m.Profiles {
			if !s.can(i, slot) {
				continue
			}
			s.add(i, slot)
			added = append(added, Instance{Profile: p.Name, Start: slot})
			walk(slot + p.MemorySlots)
			added = added[:len(added)-1]
			s.remove(i, slot)
		}
		walk(slot + 1)
	}
	walk(0)
}

// extensions groups every layout extending base by what it adds and keeps the
// cheapest per group (first seen on ties, so results are deterministic).
func (m *Model) extensions(base gpuState) []config {
	byKey := map[uint64]int{}
	var out []config
	m.enumerate(base, func(s *gpuState, added []Instance) {
		add := make([]int, len(m.Profiles))
		for i := range add {
			add[i] = s.count[i] - base.count[i]
		}
		key := countsKey(add)
		c := s.cost()
		if j, ok := byKey[key]; ok {
			if c.Less(out[j].cost) {
				out[j].cost, out[j].inst = c, append([]Instance(nil), added...)
			}
			return
		}
		byKey[key] = len(out)
		out = append(out, config{add: add, inst: append([]Instance(nil), added...), cost: c})
	})
	return out
}

// countsKey packs per-profile counts (each below 16: at most 8 slots) into a key.
func countsKey(c []int) uint64 {
	var k uint64
	for _, n := range c {
		k = k<<4 | uint64(n)
	}
	return k
}

// emptyConfigs caches the non-empty extensions of an empty GPU.
func (m *Model) emptyConfigs() []config {
	m.once.Do(func() {
		for _, c := range m.extensions(m.newState()) {
			if c.cost.GPUs > 0 {
				m.configs = append(m.configs, c)
			}
		}
	})
	return m.configs
}

// cachedExtensions memoises extensions per base layout. What a GPU can still
// take (and at what cost) depends only on its free slots and per-profile
// counts, so (occupancy, counts) is a complete key; there are at most a few
// thousand per model.
func (m *Model) cachedExtensions(base gpuState) []config {
	key := uint64(base.occ)<<32 | countsKey(base.count)
	if v, ok := m.ext.Load(key); ok {
		return v.([]config)
	}
	v, _ := m.ext.LoadOrStore(key, m.extensions(base))
	return v.([]config)
}
