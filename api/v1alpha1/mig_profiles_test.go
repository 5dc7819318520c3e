package v1alpha1_test

import (
	"maps"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gpuvc/gpuvc/api/v1alpha1"
	"github.com/gpuvc/gpuvc/gpu/mig"
)

// The API's list of accepted MIG profiles is the catalog's, no more, no less:
// a model added to gpu/mig must reach the Team API too.
func TestKnownMIGProfilesMatchTheCatalog(t *testing.T) {
	set := map[string]bool{}
	for _, m := range mig.Models() {
		for _, p := range m.Profiles {
			set[p.Name] = true
		}
	}
	require.Equal(t, slices.Sorted(maps.Keys(set)), v1alpha1.KnownMIGProfiles(),
		"update knownMIGProfiles in api/v1alpha1/mig_profiles.go (and the CEL rule in team_types.go, then make generate)")
}
