package complement

import (
	"maps"
	"slices"
	"strings"
)

// constraint is what a conjunction asks of one label key, normalized: either
// absent, or in (a non-empty set of values, the key present), or exists and/or
// notIn (values the key may not have; without exists a missing key matches).
// A constraint asking nothing is not kept.
type constraint struct {
	absent bool
	in     map[string]bool // nil: any value
	exists bool
	notIn  map[string]bool
}

// conjunction maps label keys to what it asks of them; the empty conjunction
// selects everything.
type conjunction map[string]constraint

// intersect returns a ∧ b, false when nothing can satisfy it.
func intersect(a, b conjunction) (conjunction, bool) {
	out := make(conjunction, len(a)+len(b))
	maps.Copy(out, a)
	for k, cb := range b {
		ca, ok := out[k]
		if !ok {
			out[k] = cb
			continue
		}
		merged, sat := both(ca, cb).normalize()
		if !sat {
			return nil, false
		}
		out[k] = merged
	}
	return out, true
}

// both asks what a and b ask (not yet normalized).
func both(a, b constraint) constraint {
	c := constraint{absent: a.absent || b.absent, exists: a.exists || b.exists}
	switch {
	case a.in != nil && b.in != nil:
		c.in = map[string]bool{}
		for v := range a.in {
			if b.in[v] {
				c.in[v] = true
			}
		}
	case a.in != nil:
		c.in = maps.Clone(a.in)
	case b.in != nil:
		c.in = maps.Clone(b.in)
	}
	if len(a.notIn)+len(b.notIn) > 0 {
		c.notIn = map[string]bool{}
		maps.Copy(c.notIn, a.notIn)
		maps.Copy(c.notIn, b.notIn)
	}
	return c
}

// normalize brings c to its normal form; false when nothing satisfies it.
func (c constraint) normalize() (constraint, bool) {
	if c.absent {
		if c.exists || c.in != nil {
			return constraint{}, false
		}
		return constraint{absent: true}, true
	}
	if c.in != nil {
		in := map[string]bool{}
		for v := range c.in {
			if !c.notIn[v] {
				in[v] = true
			}
		}
		if len(in) == 0 {
			return constraint{}, false
		}
		return constraint{in: in}, true
	}
	if len(c.notIn) == 0 {
		c.notIn = nil
	}
	return c, true
}

// asksNothing reports whether c admits every label set.
func (c constraint) asksNothing() bool {
	return !c.absent && c.in == nil && !c.exists && len(c.notIn) == 0
}

// implies reports whether every label set c admits is admitted by d (both
// normalized, on the same key).
func (c constraint) implies(d constraint) bool {
	switch {
	case d.absent:
		return c.absent
	case d.in != nil:
		return c.in != nil && subset(c.in, d.in)
	case d.exists:
		return (c.in != nil && disjoint(c.in, d.notIn)) || (c.exists && subset(d.notIn, c.notIn))
	default: // only notIn
		return c.absent || (c.in != nil && disjoint(c.in, d.notIn)) || subset(d.notIn, c.notIn)
	}
}

// implies reports whether c selects nothing d does not: every key d constrains,
// c constrains at least as tightly.
func (c conjunction) implies(d conjunction) bool {
	for k, dk := range d {
		ck, ok := c[k]
		if !ok || !ck.implies(dk) {
			return false
		}
	}
	return true
}

// simplify drops conjunctions another one implies (keeping the first of equal
// ones), so the union selects the same with fewer of them; the result is sorted.
func simplify(cs []conjunction) []conjunction {
	slices.SortFunc(cs, func(a, b conjunction) int { return strings.Compare(a.String(), b.String()) })
	var out []conjunction
	for i, c := range cs {
		redundant := false
		for j, d := range cs {
			if i != j && c.implies(d) && (j < i || !d.implies(c)) {
				redundant = true
				break
			}
		}
		if !redundant {
			out = append(out, c)
		}
	}
	return out
}

// size counts the values c names: what makes a selector long.
func (c conjunction) size() int {
	n := 0
	for _, k := range c {
		n += 1 + len(k.in) + len(k.notIn)
	}
	return n
}

// String writes c as a selector string, keys sorted: a stable order for output
// and tests.
func (c conjunction) String() string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(c)) {
		kc := c[k]
		switch {
		case kc.absent:
			parts = append(parts, "!"+k)
		case kc.in != nil:
			parts = append(parts, k+" in ("+strings.Join(slices.Sorted(maps.Keys(kc.in)), ",")+")")
		default:
			if kc.exists {
				parts = append(parts, k)
			}
			if len(kc.notIn) > 0 {
				parts = append(parts, k+" notin ("+strings.Join(slices.Sorted(maps.Keys(kc.notIn)), ",")+")")
			}
		}
	}
	return strings.Join(parts, ",")
}

func subset(a, b map[string]bool) bool {
	for v := range a {
		if !b[v] {
			return false
		}
	}
	return true
}

func disjoint(a, b map[string]bool) bool {
	for v := range a {
		if b[v] {
			return false
		}
	}
	return true
}
