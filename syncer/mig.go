package syncer

import (
	"strings"

	"github.com/gpuvc/gpuvc/api/contract"
)

// MIGMapper knows the MIG profiles of GPU models. gpu/mig implements it (see
// package syncer/migmap); without one only exactly allowed profiles pass.
type MIGMapper interface {
	// Offers reports whether GPUs of product (a GFD product name) have profile.
	Offers(product, profile string) (bool, error)
	// Map returns the smallest of candidates (profiles of product) that gives at
	// least the compute slices and memory profile names, or an error saying why
	// none does.
	Map(product, profile string, candidates []string) (string, error)
}

// migProfile returns the profile of a MIG resource name:
// nvidia.com/mig-1g.10gb → 1g.10gb, nvidia.com/mig-1g.10gb.me → 1g.10gb+me.
func migProfile(resource string) (string, bool) {
	p, ok := strings.CutPrefix(resource, contract.ResourceMIGPrefix)
	if !ok || p == "" {
		return "", false
	}
	if base, ok := strings.CutSuffix(p, ".me"); ok {
		p = base + "+me"
	}
	return p, true
}

// migResource is the inverse of migProfile (resource names may not contain '+').
func migResource(profile string) string {
	return contract.ResourceMIGPrefix + strings.ReplaceAll(profile, "+", ".")
}
