package team_test

import (
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

// printedObject is what -o yaml|json must carry for `team apply -f` to take it back.
type printedObject struct {
	APIVersion string          `json:"apiVersion"`
	Kind       string          `json:"kind"`
	Metadata   map[string]any  `json:"metadata"`
	Items      []printedObject `json:"items"`
}

// TestGetOutputAppliesAgain: `team get NAME -o yaml|json` prints a manifest that
// `team apply -f` takes back unchanged, against the real control plane.
func TestGetOutputAppliesAgain(t *testing.T) {
	integration(t)
	dir := t.TempDir()
	t.Cleanup(func() { gpuvc(t, "team", "delete", "lab", "ads") })
	r := gpuvc(t, "team", "apply", "-f", writeFile(t, dir, "teams.yaml", twoTeams))
	require.Equal(t, 0, r.code, r.errOut)

	for _, format := range []string{"yaml", "json"} {
		t.Run(format, func(t *testing.T) {
			r := gpuvc(t, "team", "get", "lab", "-o", format)
			require.Equal(t, 0, r.code, r.errOut)
			var obj printedObject
			require.NoError(t, yaml.Unmarshal([]byte(r.out), &obj))
			require.Equal(t, "gpuvc.dev/v1alpha1", obj.APIVersion)
			require.Equal(t, "Team", obj.Kind)
			require.NotContains(t, obj.Metadata, "managedFields")

			r = gpuvc(t, "team", "apply", "-f", writeFile(t, dir, "lab."+format, r.out))
			require.Equal(t, 0, r.code, r.errOut)
			require.Equal(t, "team/lab unchanged\n", r.out)
		})
	}
}

// TestListOutputIsATeamListThatAppliesAgain: `team list -o yaml|json` prints a
// TeamList whose items are whole Team manifests; applied again, nothing changes.
func TestListOutputIsATeamListThatAppliesAgain(t *testing.T) {
	integration(t)
	dir := t.TempDir()
	t.Cleanup(func() { gpuvc(t, "team", "delete", "lab", "ads") })
	r := gpuvc(t, "team", "apply", "-f", writeFile(t, dir, "teams.yaml", twoTeams))
	require.Equal(t, 0, r.code, r.errOut)

	for _, format := range []string{"yaml", "json"} {
		t.Run(format, func(t *testing.T) {
			var out string
			var list printedObject
			// Teams other tests deleted may still be finishing; wait for just ours.
			require.EventuallyWithT(t, func(c *assert.CollectT) {
				r := gpuvc(t, "team", "list", "-o", format)
				require.Equal(c, 0, r.code, r.errOut)
				list = printedObject{}
				require.NoError(c, yaml.Unmarshal([]byte(r.out), &list))
				var names []string
				for _, item := range list.Items {
					names = append(names, item.Metadata["name"].(string))
				}
				slices.Sort(names)
				require.Equal(c, []string{"ads", "lab"}, names)
				out = r.out
			}, 2*time.Minute, 500*time.Millisecond)
			require.Equal(t, "gpuvc.dev/v1alpha1", list.APIVersion)
			require.Equal(t, "TeamList", list.Kind)
			for _, item := range list.Items {
				require.Equal(t, "gpuvc.dev/v1alpha1", item.APIVersion)
				require.Equal(t, "Team", item.Kind)
				require.NotContains(t, item.Metadata, "managedFields")
			}

			r := gpuvc(t, "team", "apply", "-f", writeFile(t, dir, "all."+format, out))
			require.Equal(t, 0, r.code, r.errOut)
			require.Contains(t, r.out, "team/lab unchanged")
			require.Contains(t, r.out, "team/ads unchanged")
		})
	}
}
