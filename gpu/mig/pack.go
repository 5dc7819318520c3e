package mig

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// Placement is one instance the plan adds, on GPU index GPU.
type Placement struct {
	GPU int `json:"gpu"`
	Instance
}

// Plan is a layout of requested profiles over a set of GPUs.
type Plan struct {
	Layouts [][]Instance // per GPU: existing plus added instances, by start
	Added   []Placement  // the added instances, by GPU then start
	Cost    Cost         // cost of all GPUs' final layouts
	// Optimal is false only when the request was too large for the exact
	// search (more than MaxSearchStates states) and a greedy layout was used.
	Optimal bool
}

// MaxSearchStates bounds the exact search: the product over profiles of
// (requested count + 1), times the number of partly used GPUs plus one.
const MaxSearchStates = 1 << 20

// Pack lays the requested profiles (a multiset of names) onto the GPUs, whose
// existing instances stay where they are. len(existing) is the number of
// GPUs; a nil entry is an empty GPU. The plan minimises Cost: fewest GPUs in
// use, then fewest stranded slots, then bigger free blocks. When the request
// cannot fit, the error names the profiles left over.
func (m *Model) Pack(existing [][]Instance, request []string) (Plan, error) {
	p, err := m.newPacker(existing, request)
	if err != nil {
		return Plan{}, err
	}
	states := p.total * (len(p.fixed) + 1)
	if p.total > MaxSearchStates || states > MaxSearchStates {
		return p.greedy()
	}
	p.init()
	full := p.total - 1
	if !p.f(0, full).ok {
		return Plan{}, p.noFit()
	}
	return p.plan(full), nil
}

type packer struct {
	m      *Model
	orig   [][]Instance // existing instances as given
	gpus   []gpuState   // all GPUs, existing instances loaded
	fixed  []int        // indices of GPUs that already hold instances
	empty  []int        // indices of empty GPUs
	demand []int        // requested count per profile
	radix  []int        // mixed-radix weights of a demand vector
	total  int          // number of demand sub-vectors

	fixedExt [][]config // per fixed GPU: what it can take
	configs  []config   // what an empty GPU can take
	byAnchor [][]int    // configs that contain at least one of profile k
	memo     [][]entry  // memo[i] for fixed GPU i; memo[len(fixed)] for empties
}

type entry struct {
	done, ok bool
	cost     Cost
	choice   int
}

func (m *Model) newPacker(existing [][]Instance, request []string) (*packer, error) {
	p := &packer{m: m, demand: make([]int, len(m.Profiles))}
	for g, ins := range existing {
		s, err := m.load(ins)
		if err != nil {
			return nil, fmt.Errorf("GPU %d: %w", g, err)
		}
		p.gpus = append(p.gpus, s)
		p.orig = append(p.orig, slices.Clone(ins))
		if s.occ != 0 {
			p.fixed = append(p.fixed, g)
		} else {
			p.empty = append(p.empty, g)
		}
	}
	for _, name := range request {
		i := m.index(name)
		if i < 0 {
			_, err := m.Profile(name)
			return nil, err
		}
		p.demand[i]++
	}
	p.total = 1
	for _, d := range p.demand {
		p.radix = append(p.radix, p.total)
		if p.total > MaxSearchStates {
			continue // the caller falls back to greedy; avoid overflow
		}
		p.total *= d + 1
	}
	return p, nil
}

func (p *packer) init() {
	p.configs = p.m.emptyConfigs()
	p.byAnchor = make([][]int, len(p.demand))
	for ci, c := range p.configs {
		for k, n := range c.add {
			if n > 0 {
				p.byAnchor[k] = append(p.byAnchor[k], ci)
			}
		}
	}
	for _, g := range p.fixed {
		p.fixedExt = append(p.fixedExt, p.m.cachedExtensions(p.gpus[g]))
	}
	p.memo = make([][]entry, len(p.fixed)+1)
	for i := range p.memo {
		p.memo[i] = make([]entry, p.total)
	}
}

// decode/fits/sub work on demand vectors encoded as mixed-radix integers.
func (p *packer) count(d, k int) int { return d / p.radix[k] % (p.demand[k] + 1) }

func (p *packer) within(d int, add []int) bool {
	for k, n := range add {
		if n > p.count(d, k) {
			return false
		}
	}
	return true
}

func (p *packer) sub(d int, add []int) int {
	for k, n := range add {
		d -= n * p.radix[k]
	}
	return d
}

// f is the best cost of placing demand d on fixed GPUs i.. and the empty GPUs.
func (p *packer) f(i, d int) entry {
	if i == len(p.fixed) {
		e := p.e(d)
		if e.cost.GPUs > len(p.empty) {
			e.ok = false
		}
		return e
	}
	en := &p.memo[i][d]
	if en.done {
		return *en
	}
	en.done = true
	for ci, c := range p.fixedExt[i] {
		if !p.within(d, c.add) {
			continue
		}
		rest := p.f(i+1, p.sub(d, c.add))
		if !rest.ok {
			continue
		}
		if total := c.cost.Plus(rest.cost); !en.ok || total.Less(en.cost) {
			en.ok, en.cost, en.choice = true, total, ci
		}
	}
	return *en
}

// e is the best cost of placing demand d on as many empty GPUs as needed.
// The GPU holding the biggest remaining profile is chosen first: every
// solution has such a GPU and GPUs are interchangeable, so this is exact.
func (p *packer) e(d int) entry {
	en := &p.memo[len(p.fixed)][d]
	if en.done {
		return *en
	}
	en.done = true
	if d == 0 {
		en.ok = true
		return *en
	}
	anchor := -1
	for k := range p.demand {
		if p.count(d, k) > 0 && (anchor < 0 || p.m.Profiles[k].MemorySlots >= p.m.Profiles[anchor].MemorySlots) {
			anchor = k
		}
	}
	for _, ci := range p.byAnchor[anchor] {
		c := p.configs[ci]
		if !p.within(d, c.add) {
			continue
		}
		rest := p.e(p.sub(d, c.add))
		if total := c.cost.Plus(rest.cost); !en.ok || total.Less(en.cost) {
			en.ok, en.cost, en.choice = true, total, ci
		}
	}
	return *en
}

// plan rebuilds the layout chosen for demand d.
func (p *packer) plan(d int) Plan {
	layouts := make([][]Instance, len(p.gpus))
	var added []Placement
	put := func(g int, inst []Instance) {
		for _, in := range inst {
			added = append(added, Placement{GPU: g, Instance: in})
		}
	}
	cost := p.f(0, d).cost
	for i, g := range p.fixed {
		c := p.fixedExt[i][p.memo[i][d].choice]
		put(g, c.inst)
		d = p.sub(d, c.add)
	}
	for _, g := range p.empty {
		if d == 0 {
			break
		}
		c := p.configs[p.e(d).choice]
		put(g, c.inst)
		d = p.sub(d, c.add)
	}
	return p.finish(layouts, added, cost, true)
}

func (p *packer) finish(layouts [][]Instance, added []Placement, cost Cost, optimal bool) Plan {
	for g, orig := range p.orig {
		layouts[g] = append(layouts[g], orig...)
	}
	for _, a := range added {
		layouts[a.GPU] = append(layouts[a.GPU], a.Instance)
	}
	for _, l := range layouts {
		slices.SortFunc(l, func(a, b Instance) int { return cmp.Compare(a.Start, b.Start) })
	}
	slices.SortStableFunc(added, func(a, b Placement) int {
		return cmp.Or(cmp.Compare(a.GPU, b.GPU), cmp.Compare(a.Start, b.Start))
	})
	return Plan{Layouts: layouts, Added: added, Cost: cost, Optimal: optimal}
}

// noFit names what is left over when the whole request cannot fit: profiles
// are kept biggest first while the kept part still fits.
func (p *packer) noFit() error {
	order := p.itemsBySize()
	kept := 0
	var left []int
	for _, k := range order {
		if next := kept + p.radix[k]; p.f(0, next).ok {
			kept = next
		} else {
			left = append(left, k)
		}
	}
	return fmt.Errorf("%s does not fit on %d %s GPU(s): left over %s",
		p.describe(p.demand), len(p.gpus), p.m.Name, p.describe(p.counts(left)))
}

// itemsBySize lists one profile index per requested instance, biggest first.
func (p *packer) itemsBySize() []int {
	var items []int
	for k, n := range p.demand {
		for range n {
			items = append(items, k)
		}
	}
	slices.SortStableFunc(items, func(a, b int) int {
		return cmp.Compare(p.m.Profiles[b].MemorySlots, p.m.Profiles[a].MemorySlots)
	})
	return items
}

func (p *packer) counts(items []int) []int {
	c := make([]int, len(p.demand))
	for _, k := range items {
		c[k]++
	}
	return c
}

func (p *packer) describe(counts []int) string {
	var parts []string
	for k, n := range counts {
		if n > 0 {
			parts = append(parts, fmt.Sprintf("%d×%s", n, p.m.Profiles[k].Name))
		}
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// greedy places biggest profiles first, each where it costs least, opening
// empty GPUs in order. Used only beyond MaxSearchStates.
func (p *packer) greedy() (Plan, error) {
	states := make([]gpuState, len(p.gpus))
	for g, s := range p.gpus {
		states[g] = s.clone()
	}
	var added []Placement
	var left []int
	for _, k := range p.itemsBySize() {
		bestG, bestSt, found := -1, -1, false
		var bestDelta Cost
		for g := range states {
			s := &states[g]
			before := s.cost()
			for _, st := range p.m.Profiles[k].Starts {
				if !s.can(k, st) {
					continue
				}
				s.add(k, st)
				after := s.cost()
				s.remove(k, st)
				delta := Cost{after.GPUs - before.GPUs, after.Stranded - before.Stranded, after.Spread - before.Spread}
				if !found || delta.Less(bestDelta) {
					bestG, bestSt, bestDelta, found = g, st, delta, true
				}
			}
		}
		if !found {
			left = append(left, k)
			continue
		}
		states[bestG].add(k, bestSt)
		added = append(added, Placement{GPU: bestG, Instance: Instance{Profile: p.m.Profiles[k].Name, Start: bestSt}})
	}
	if len(left) > 0 {
		return Plan{}, fmt.Errorf("%s does not fit on %d %s GPU(s): left over %s",
			p.describe(p.demand), len(p.gpus), p.m.Name, p.describe(p.counts(left)))
	}
	var cost Cost
	for g := range states {
		cost = cost.Plus(states[g].cost())
	}
	return p.finish(make([][]Instance, len(p.gpus)), added, cost, false), nil
}
