package team_test

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestApplyDryRunChangesNothing: the server dry run says what apply would do and
// warns about the pools, the client one only checks; neither stores anything.
func TestApplyDryRunChangesNothing(t *testing.T) {
	integration(t)
	file := writeFile(t, t.TempDir(), "teams.yaml", twoTeams)

	r := gpuvc(t, "team", "apply", "-f", file, "--dry-run=client")
	require.Equal(t, 0, r.code, r.errOut)
	require.Equal(t, "team/lab valid (client dry run)\nteam/ads valid (client dry run)\n", r.out)

	r = gpuvc(t, "team", "apply", "-f", file, "--dry-run")
	require.Equal(t, 0, r.code, r.errOut)
	require.Equal(t, "team/lab created (server dry run)\nteam/ads created (server dry run)\n", r.out)
	require.NotContains(t, r.errOut, "warning: team ads", "h100 serves whole GPUs, all ads asks for")
	for _, name := range []string{"lab", "ads"} {
		r = gpuvc(t, "team", "get", name)
		require.Equal(t, 1, r.code, "a dry run stored team %s", name)
	}

	r = gpuvc(t, "team", "apply", "-f", file, "--dry-run=maybe")
	require.Equal(t, 1, r.code)
	require.Contains(t, r.errOut, `--dry-run "maybe" is not supported`)
}
