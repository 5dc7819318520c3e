package team_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	return p
}

const twoTeams = `apiVersion: gpuvc.dev/v1alpha1
kind: Team
metadata: {name: lab}
spec:
  pool: a100
  quota: {mig: {3g.40gb: 2, 1g.10gb: 4}}
---
apiVersion: gpuvc.dev/v1alpha1
kind: Team
metadata: {name: ads}
spec:
  pool: h100
  quota: {gpus: 2}
`

func TestApplyCreatesConfiguresAndLeavesAlone(t *testing.T) {
	integration(t)
	dir := t.TempDir()
	writeFile(t, dir, "teams.yaml", twoTeams)
	writeFile(t, dir, "README.md", "not a manifest: ignored")
	t.Cleanup(func() { gpuvc(t, "team", "delete", "lab", "ads") })

	r := gpuvc(t, "team", "apply", "-f", dir)
	require.Equal(t, 0, r.code, r.errOut)
	require.Contains(t, r.out, "team/lab created")
	require.Contains(t, r.out, "team/ads created")

	r = gpuvc(t, "team", "apply", "-f", dir)
	require.Equal(t, 0, r.code, r.errOut)
	require.Contains(t, r.out, "team/lab unchanged")

	writeFile(t, dir, "teams.yaml", twoTeams[:len(twoTeams)-len("  quota: {gpus: 2}\n")]+"  quota: {gpus: 3}\n")
	r = gpuvc(t, "team", "apply", "-f", dir)
	require.Equal(t, 0, r.code, r.errOut)
	require.Contains(t, r.out, "team/ads configured")
	require.Contains(t, r.out, "team/lab unchanged")
}

func TestApplyRefusesWhatIsNotATeam(t *testing.T) {
	dir := t.TempDir()
	cases := map[string]struct {
		content, want string
	}{
		"other kind": {"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n", "document 1 is v1 ConfigMap, not a Team"},
		"typo field": {"apiVersion: gpuvc.dev/v1alpha1\nkind: Team\nmetadata: {name: x}\nspec: {pool: a, quotas: {}}\n", `unknown field "quotas"`},
		"no name":    {"apiVersion: gpuvc.dev/v1alpha1\nkind: Team\nspec: {pool: a}\n", "metadata.name is required"},
		"duplicate":  {twoTeams + "---\n" + twoTeams, "team lab is defined twice"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := writeFile(t, dir, name+".yaml", tc.content)
			r := gpuvc(t, "team", "apply", "-f", f)
			require.Equal(t, 1, r.code)
			require.Contains(t, r.errOut, tc.want)
		})
	}
	r := gpuvc(t, "team", "apply", "-f", filepath.Join(dir, "missing.yaml"))
	require.Equal(t, 1, r.code)
	require.Contains(t, r.errOut, "no such file or directory")
}

// TestExamplesApply keeps docs/examples valid: every example team is accepted.
func TestExamplesApply(t *testing.T) {
	integration(t)
	r := gpuvc(t, "team", "apply", "-f", "../../../../docs/examples")
	require.Equal(t, 0, r.code, r.errOut)
	require.Contains(t, r.out, "team/fraud created")
	require.Contains(t, r.out, "team/research created")
	gpuvc(t, "team", "delete", "fraud", "research")
}
