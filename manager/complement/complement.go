package complement

import (
	"fmt"
	"maps"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Result is the complement of a union of selectors.
type Result struct {
	// Selectors select, together, exactly the label sets none of the given
	// selectors selects. Empty: the given selectors select everything. Nil when
	// the complement needs more than the limit.
	Selectors []metav1.LabelSelector
	// Needed is how many selectors the complement takes; above the limit, at
	// least how many (the expansion stops once it passes its working bound).
	Needed int
}

// Of returns the complement of the union of selectors in at most limit
// selectors (Result.Selectors nil when it needs more), each naming at most
// maxValues keys and values together. A selector with an operator Kubernetes
// does not know is an error naming it.
func Of(selectors []metav1.LabelSelector, limit, maxValues int) (Result, error) {
	sets := make([][]conjunction, 0, len(selectors))
	for i, s := range selectors {
		neg, err := negation(s)
		if err != nil {
			return Result{}, fmt.Errorf("selector %d: %w", i, err)
		}
		sets = append(sets, neg)
	}
	// The expansion may pass the limit before simplification brings it back:
	// it works up to a few times the limit.
	work := max(4*limit, 64)
	best, ok := expand(sets, work)
	if split, splitOK := splitOnPinnedKey(selectors, work); splitOK && (!ok || shorter(split, best)) {
		best, ok = split, true
	}
	if !ok {
		return Result{Needed: work + 1}, nil
	}
	if len(best) > limit {
		return Result{Needed: len(best)}, nil
	}
	out := make([]metav1.LabelSelector, 0, len(best))
	for _, c := range best {
		if c.size() > maxValues {
			return Result{Needed: len(best)}, nil
		}
		out = append(out, c.selector())
	}
	return Result{Selectors: out, Needed: len(out)}, nil
}

// shorter prefers fewer selectors, then fewer values.
func shorter(a, b []conjunction) bool {
	if len(a) != len(b) {
		return len(a) < len(b)
	}
	return total(a) < total(b)
}

func total(cs []conjunction) int {
	n := 0
	for _, c := range cs {
		n += c.size()
	}
	return n
}

// negation returns the complement of one selector: one conjunction per
// requirement, that requirement negated. The empty selector selects
// everything: its complement is empty.
func negation(s metav1.LabelSelector) ([]conjunction, error) {
	var out []conjunction
	for _, k := range slices.Sorted(maps.Keys(s.MatchLabels)) {
		out = append(out, conjunction{k: {notIn: set(s.MatchLabels[k])}})
	}
	for _, r := range s.MatchExpressions {
		var c constraint
		switch r.Operator {
		case metav1.LabelSelectorOpIn:
			c = constraint{notIn: set(r.Values...)}
		case metav1.LabelSelectorOpNotIn:
			c = constraint{in: set(r.Values...)}
		case metav1.LabelSelectorOpExists:
			c = constraint{absent: true}
		case metav1.LabelSelectorOpDoesNotExist:
			c = constraint{exists: true}
		default:
			return nil, fmt.Errorf("matchExpressions key %q: operator %q is not one of In, NotIn, Exists, DoesNotExist", r.Key, r.Operator)
		}
		c, sat := c.normalize()
		switch {
		case !sat: // NotIn []: the requirement holds for every pod, its negation for none
		case c.asksNothing(): // In []: it holds for none, its negation for every pod
			out = append(out, conjunction{})
		default:
			out = append(out, conjunction{r.Key: c})
		}
	}
	return out, nil
}

// expand intersects the unions in sets into one union of conjunctions,
// simplifying as it goes; false once it holds more than work of them.
func expand(sets [][]conjunction, work int) ([]conjunction, bool) {
	acc := []conjunction{{}}
	for _, alternatives := range sets {
		// The products before simplification are bounded too: simplifying is
		// quadratic, and a selector may have many requirements.
		if len(acc)*len(alternatives) > 8*work {
			return nil, false
		}
		var next []conjunction
		for _, c := range acc {
			for _, a := range alternatives {
				if n, sat := intersect(c, a); sat {
					next = append(next, n)
				}
			}
		}
		acc = simplify(next)
		if len(acc) > work {
			return nil, false
		}
	}
	return acc, true
}

// splitOnPinnedKey computes the same complement by cases on a key every
// selector pins to a single value (matchLabels, or In with one value): the
// pods whose key has none of those values, and for each value the complement
// of that value's selectors among pods with it. vCluster's copies pin the
// virtual namespace, so teams with policies in several namespaces cost a sum,
// not a product. False when no key is pinned by all, or the work bound passes.
func splitOnPinnedKey(selectors []metav1.LabelSelector, work int) ([]conjunction, bool) {
	key, ok := pinnedKey(selectors)
	if !ok {
		return nil, false
	}
	byValue := map[string][]metav1.LabelSelector{}
	for _, s := range selectors {
		v, rest := unpin(s, key)
		byValue[v] = append(byValue[v], rest)
	}
	values := slices.Sorted(maps.Keys(byValue))
	out := []conjunction{{key: {notIn: set(values...)}}}
	for _, v := range values {
		sub := byValue[v]
		subSets := make([][]conjunction, 0, len(sub))
		for _, s := range sub {
			neg, _ := negation(s) // the operators were checked
			subSets = append(subSets, neg)
		}
		part, ok := splitOnPinnedKey(sub, work)
		if expanded, expandOK := expand(subSets, work); expandOK && (!ok || shorter(expanded, part)) {
			part, ok = expanded, true
		}
		if !ok {
			return nil, false
		}
		for _, c := range part {
			// With one value, the case "key has another value or none" already
			// covers every pod the pin would exclude: the pin can go.
			if len(values) > 1 {
				var sat bool
				if c, sat = intersect(c, conjunction{key: {in: set(v)}}); !sat {
					continue
				}
			}
			out = append(out, c)
		}
		if len(out) > work {
			return nil, false
		}
	}
	return simplify(out), true
}

// pinnedKey returns the key every selector pins to a single value that has the
// fewest distinct values (then the first in sorted order): a key with one value
// splits off for free, and fewer values make fewer cases.
func pinnedKey(selectors []metav1.LabelSelector) (string, bool) {
	if len(selectors) == 0 {
		return "", false
	}
	values := map[string]map[string]bool{}
	for k, v := range pins(selectors[0]) {
		values[k] = set(v)
	}
	for _, s := range selectors[1:] {
		p := pins(s)
		for k := range values {
			v, ok := p[k]
			if !ok {
				delete(values, k)
				continue
			}
			values[k][v] = true
		}
	}
	best, found := "", false
	for _, k := range slices.Sorted(maps.Keys(values)) {
		if !found || len(values[k]) < len(values[best]) {
			best, found = k, true
		}
	}
	return best, found
}

// pins returns the keys s pins to one value, with that value.
func pins(s metav1.LabelSelector) map[string]string {
	p := maps.Clone(s.MatchLabels)
	if p == nil {
		p = map[string]string{}
	}
	for _, r := range s.MatchExpressions {
		if r.Operator == metav1.LabelSelectorOpIn && len(r.Values) == 1 {
			if v, ok := p[r.Key]; ok && v != r.Values[0] {
				continue // pinned to two values: selects nothing, leave it to the expansion
			}
			p[r.Key] = r.Values[0]
		}
	}
	return p
}

// unpin returns the value s pins key to and s without that pin.
func unpin(s metav1.LabelSelector, key string) (string, metav1.LabelSelector) {
	v := pins(s)[key]
	rest := metav1.LabelSelector{MatchLabels: maps.Clone(s.MatchLabels)}
	delete(rest.MatchLabels, key)
	for _, r := range s.MatchExpressions {
		if r.Key == key && r.Operator == metav1.LabelSelectorOpIn && len(r.Values) == 1 && r.Values[0] == v {
			continue
		}
		rest.MatchExpressions = append(rest.MatchExpressions, r)
	}
	return v, rest
}

// selector writes c as a LabelSelector: a single allowed value as matchLabels,
// the rest as matchExpressions sorted by key.
func (c conjunction) selector() metav1.LabelSelector {
	var s metav1.LabelSelector
	for _, k := range slices.Sorted(maps.Keys(c)) {
		kc := c[k]
		switch {
		case kc.absent:
			s.MatchExpressions = append(s.MatchExpressions, metav1.LabelSelectorRequirement{Key: k, Operator: metav1.LabelSelectorOpDoesNotExist})
		case len(kc.in) == 1:
			if s.MatchLabels == nil {
				s.MatchLabels = map[string]string{}
			}
			for v := range kc.in {
				s.MatchLabels[k] = v
			}
		case kc.in != nil:
			s.MatchExpressions = append(s.MatchExpressions, metav1.LabelSelectorRequirement{Key: k, Operator: metav1.LabelSelectorOpIn, Values: slices.Sorted(maps.Keys(kc.in))})
		default:
			if kc.exists {
				s.MatchExpressions = append(s.MatchExpressions, metav1.LabelSelectorRequirement{Key: k, Operator: metav1.LabelSelectorOpExists})
			}
			if len(kc.notIn) > 0 {
				s.MatchExpressions = append(s.MatchExpressions, metav1.LabelSelectorRequirement{Key: k, Operator: metav1.LabelSelectorOpNotIn, Values: slices.Sorted(maps.Keys(kc.notIn))})
			}
		}
	}
	return s
}

func set(values ...string) map[string]bool {
	s := make(map[string]bool, len(values))
	for _, v := range values {
		s[v] = true
	}
	return s
}
