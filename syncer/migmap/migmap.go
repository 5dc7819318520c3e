// Package migmap adapts gpu/mig's catalog to syncer.MIGMapper, so the webhook's
// decisions stay free of the catalog's types.
package migmap

import (
	"fmt"
	"slices"

	"github.com/gpuvc/gpuvc/gpu/mig"
)

// Catalog maps MIG profiles with gpu/mig's model catalog.
type Catalog struct{}

// Offers reports whether GPUs of product have profile.
func (Catalog) Offers(product, profile string) (bool, error) {
	m, err := mig.Lookup(product)
	if err != nil {
		return false, err
	}
	_, err = m.Profile(profile)
	return err == nil, nil
}

// Map returns the smallest candidate profile of product that gives at least the
// compute slices and memory profile names (gpu/mig's Map restricted to
// candidates).
func (Catalog) Map(product, profile string, candidates []string) (string, error) {
	m, err := mig.Lookup(product)
	if err != nil {
		return "", err
	}
	sub := &mig.Model{Name: m.Name, Products: m.Products, MemoryMiB: m.MemoryMiB, Slots: m.Slots,
		ComputeSlices: m.ComputeSlices, MaxMediaInstances: m.MaxMediaInstances}
	for _, p := range m.Profiles {
		if slices.Contains(candidates, p.Name) {
			sub.Profiles = append(sub.Profiles, p)
		}
	}
	if len(sub.Profiles) == 0 {
		return "", fmt.Errorf("none of the profiles %v exists on %s", candidates, m.Name)
	}
	p, err := sub.Map(mig.Request{Profile: profile})
	if err != nil {
		return "", err
	}
	return p.Name, nil
}
