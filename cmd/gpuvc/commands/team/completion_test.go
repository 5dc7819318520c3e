package team_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// completions runs cobra's hidden __complete command as a shell would and returns
// the offered words (the last line is the directive).
func completions(t *testing.T, args ...string) []string {
	t.Helper()
	r := gpuvc(t, append([]string{"__complete"}, args...)...)
	require.Equal(t, 0, r.code, r.errOut)
	lines := strings.Split(strings.TrimSpace(r.out), "\n")
	require.Equal(t, ":4", lines[len(lines)-1], "no file completion: %q", r.out)
	return lines[:len(lines)-1]
}

func TestCompleteOutputFormats(t *testing.T) {
	require.Equal(t, []string{"text", "yaml", "json"}, completions(t, "team", "get", "lab", "-o", ""))
	require.Equal(t, []string{"table", "wide", "yaml", "json"}, completions(t, "team", "list", "--output", ""))
}

// TestCompletionIsQuietWithoutACluster: a shell prompt gets no names and no error
// text when the cluster cannot be reached.
func TestCompletionIsQuietWithoutACluster(t *testing.T) {
	none := "/nonexistent/kubeconfig"
	for _, args := range [][]string{
		{"team", "get", "--kubeconfig", none, ""},
		{"team", "delete", "--kubeconfig", none, ""},
		{"team", "create", "x", "--kubeconfig", none, "--pool", ""},
	} {
		require.Empty(t, completions(t, args...), args)
	}
}

// TestCompleteTeamNamesAndPools asks the real control plane for team names and
// the node pools.
func TestCompleteTeamNamesAndPools(t *testing.T) {
	integration(t)
	dir := t.TempDir()
	t.Cleanup(func() { gpuvc(t, "team", "delete", "lab", "ads") })
	r := gpuvc(t, "team", "apply", "-f", writeFile(t, dir, "teams.yaml", twoTeams))
	require.Equal(t, 0, r.code, r.errOut)

	require.Subset(t, completions(t, "team", "get", ""), []string{"ads", "lab"})
	require.Equal(t, []string{"lab"}, completions(t, "team", "get", "la"))
	require.Empty(t, completions(t, "team", "get", "lab", ""), "get takes one team")
	require.Empty(t, completions(t, "team", "kubeconfig", "lab", ""), "kubeconfig takes one team")
	del := completions(t, "team", "delete", "lab", "")
	require.Contains(t, del, "ads")
	require.NotContains(t, del, "lab", "already named")

	require.Subset(t, completions(t, "team", "create", "x", "--pool", ""), []string{"a100", "h100"})
	require.Equal(t, []string{"h100"}, completions(t, "team", "create", "x", "--pool", "h"))
}
