package v1alpha1_test

import (
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/gpuvc/gpuvc/api/v1alpha1"
)

// TestGoAndCRDValidationAgree runs the API server's tables through the Go rules the
// CLI applies before any request: every Team the CRD refuses, Validate refuses on
// the same field, and every Team the CRD accepts, Validate accepts. Documents that
// do not decode into a Team (unknown fields, wrong types) are the decoder's job.
func TestGoAndCRDValidationAgree(t *testing.T) {
	for name, tc := range invalidTeams {
		t.Run("invalid/"+name, func(t *testing.T) {
			team, ok := decodeTeam(t, tc.manifest)
			if !ok || name == "no quota" { // an absent quota decodes as an empty one
				return
			}
			errs := team.Validate()
			require.NotEmpty(t, errs, "Validate accepted what the API server refuses")
			path, _, _ := strings.Cut(tc.want[0], ":")
			require.Contains(t, errs.ToAggregate().Error(), path)
		})
	}
	for name, manifest := range validTeams {
		t.Run("valid/"+name, func(t *testing.T) {
			team, ok := decodeTeam(t, manifest)
			require.True(t, ok)
			require.Empty(t, team.Validate())
		})
	}
}

func decodeTeam(t *testing.T, manifest string) (*v1alpha1.Team, bool) {
	t.Helper()
	team := &v1alpha1.Team{}
	err := yaml.UnmarshalStrict([]byte("apiVersion: gpuvc.dev/v1alpha1\nkind: Team\n"+manifest), team)
	return team, err == nil
}

// TestCRDKnowsTheCatalogMIGProfiles: the CRD lists known MIG profiles in a CEL rule
// (it cannot call Go); it must list exactly the catalog's.
func TestCRDKnowsTheCatalogMIGProfiles(t *testing.T) {
	src, err := os.ReadFile("team_types.go")
	require.NoError(t, err)
	m := regexp.MustCompile(`p in \[([^\]]*)\]`).FindSubmatch(src)
	require.NotNil(t, m, "no known-profile rule in team_types.go")
	var listed []string
	for _, q := range strings.Split(string(m[1]), ",") {
		listed = append(listed, strings.Trim(strings.TrimSpace(q), "'"))
	}
	sort.Strings(listed)
	require.Equal(t, v1alpha1.KnownMIGProfiles(), listed, "update the known-profile rule in team_types.go and run make generate")
}
