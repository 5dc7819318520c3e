package teamqueue

import (
	"sort"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Kueue reports what each ClusterQueue uses and borrows, not whose guarantee a
// borrower uses: a cohort's borrowing comes from a common pool of lendable
// quota. gpuvc attributes it to the lenders in proportion to what each could
// lend right now (its idle guarantee, within its lending limit), which is exact
// with one lender and fair with several (docs/queueing.md, "Lent").

// usage is one resource's reservation in one flavor of a ClusterQueue.
type usage struct{ total, borrowed int64 }

// usageOf reads status.flavorsReservation: quota reserved for admitted
// Workloads (what admission counts), by flavor and resource.
func usageOf(cq *unstructured.Unstructured, flavor, res string) usage {
	flavors, _, _ := unstructured.NestedSlice(cq.Object, "status", "flavorsReservation")
	rm, ok := flavorResource(flavors, flavor, res)
	if !ok {
		return usage{}
	}
	return usage{total: quantity(rm["total"]), borrowed: quantity(rm["borrowed"])}
}

// quota is one resource's nominal quota and lending limit in one flavor of a
// ClusterQueue's spec.
type quota struct{ nominal, lendable int64 }

// quotaOf reads spec.resourceGroups; ok is false when the ClusterQueue does not
// have the flavor's resource. An absent lending limit lends everything.
func quotaOf(cq *unstructured.Unstructured, flavor, res string) (q quota, ok bool) {
	groups, _, _ := unstructured.NestedSlice(cq.Object, "spec", "resourceGroups")
	for _, g := range groups {
		gm, _ := g.(map[string]any)
		flavors, _, _ := unstructured.NestedSlice(gm, "flavors")
		rm, ok := flavorResource(flavors, flavor, res)
		if !ok {
			continue
		}
		q.nominal = quantity(rm["nominalQuota"])
		q.lendable = q.nominal
		if l, found := rm["lendingLimit"]; found {
			q.lendable = min(quantity(l), q.nominal)
		}
		return q, true
	}
	return quota{}, false
}

// flavorResource finds resource res of flavor in a list of Kueue's
// {name, resources: [{name, ...}]} entries (a ClusterQueue's spec flavors and
// its status reservations share this shape).
func flavorResource(flavors []any, flavor, res string) (map[string]any, bool) {
	for _, f := range flavors {
		fm, _ := f.(map[string]any)
		if fm["name"] != flavor {
			continue
		}
		rs, _, _ := unstructured.NestedSlice(fm, "resources")
		for _, r := range rs {
			if rm, _ := r.(map[string]any); rm["name"] == res {
				return rm, true
			}
		}
	}
	return nil, false
}

// lent is how much of self's guarantee of the flavor's resource the cohort
// borrows now: the cohort's borrowing shared among the ClusterQueues that have
// idle lendable quota, in proportion to it (largest remainder, ties by name).
func lent(self string, cohort []*unstructured.Unstructured, flavor, res string) int64 {
	var borrowed int64
	idle := map[string]int64{}
	for _, cq := range cohort {
		q, ok := quotaOf(cq, flavor, res)
		if !ok {
			continue
		}
		u := usageOf(cq, flavor, res)
		borrowed += u.borrowed
		// Kueue keeps nominal-lendable for the queue itself and takes its own
		// use from that first, so what it can lend now is this.
		if n := min(q.lendable, q.nominal-u.total); n > 0 {
			idle[cq.GetName()] = n
		}
	}
	return shareOut(borrowed, idle)[self]
}

// shareOut divides total among the keys in proportion to their weights, in
// whole units, never more than a key's weight nor more than the weights' sum.
func shareOut(total int64, weights map[string]int64) map[string]int64 {
	var sum int64
	names := make([]string, 0, len(weights))
	for n, w := range weights {
		sum += w
		names = append(names, n)
	}
	if sum == 0 || total <= 0 {
		return nil
	}
	total = min(total, sum)
	out := make(map[string]int64, len(weights))
	rem := make(map[string]int64, len(weights))
	var given int64
	for _, n := range names {
		out[n] = total * weights[n] / sum
		rem[n] = total * weights[n] % sum
		given += out[n]
	}
	sort.Slice(names, func(i, j int) bool {
		if rem[names[i]] != rem[names[j]] {
			return rem[names[i]] > rem[names[j]]
		}
		return names[i] < names[j]
	})
	for i := int64(0); i < total-given; i++ {
		out[names[i]]++
	}
	return out
}

// quantity parses a Kueue quantity (a string or a number) in whole units.
func quantity(v any) int64 {
	switch x := v.(type) {
	case int64:
		return x
	case float64:
		return int64(x)
	case string:
		q, err := resource.ParseQuantity(x)
		if err == nil {
			return q.Value()
		}
	}
	return 0
}
