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
		"other kind": {"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndata: {a: b}\n", "document 1 is a ConfigMap (v1), not a Team (gpuvc.dev/v1alpha1)"},
		"typo field": {"apiVersion: gpuvc.dev/v1alpha1\nkind: Team\nmetadata: {name: x}\nspec: {pool: a, quotas: {}}\n", "document 1 (team x): spec.quotas: unknown field; did you mean quota?"},
		"no name":    {"apiVersion: gpuvc.dev/v1alpha1\nkind: Team\nspec: {pool: a}\n", "metadata.name is required"},
		"duplicate":  {twoTeams + "---\n" + twoTeams, "team lab is defined twice"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := writeFile(t, dir, name+".yaml", tc.content)
			r := gpuvc(t, "team", "apply", "-f", f)
			require.Equal(t, 1, r.code)
			require.Contains(t, r.errOut, tc.want)
			require.Contains(t, r.errOut, "nothing was applied")
		})
	}
	r := gpuvc(t, "team", "apply", "-f", filepath.Join(dir, "missing.yaml"))
	require.Equal(t, 1, r.code)
	require.Contains(t, r.errOut, "no such file or directory")
}

// TestApplyFolderReportsEveryProblem: every bad file and document of a folder is
// reported in one run, nothing is applied, and subfolders are skipped aloud unless -R.
func TestApplyFolderReportsEveryProblem(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "good.yaml", twoTeams)
	writeFile(t, dir, "fraud.yaml", "apiVersion: gpuvc.dev/v1alpha1\nkind: Team\nmetadata: {name: fraud}\n"+
		"spec:\n  pool: a100\n  quota: {gpu: 4, memory: lots}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndata: {a: b}\n")
	writeFile(t, dir, "ops.json", `{"kind": "Team", "metadata": {"name": "ops"}, "spec": {"pool": "a100", "quota": {"gpus": "four"}}}`)
	require.NoError(t, os.Mkdir(filepath.Join(dir, "old"), 0o755))
	writeFile(t, filepath.Join(dir, "old"), "old.yaml", "apiVersion: gpuvc.dev/v1alpha1\nkind: Team\nmetadata: {name: old}\nspec: {pool: a100, quota: {pods: many}}\n")

	r := gpuvc(t, "team", "apply", "-f", dir)
	require.Equal(t, 1, r.code)
	for _, want := range []string{
		"skipped subfolder " + filepath.Join(dir, "old") + "/ (use -R)",
		"fraud.yaml: document 1 (team fraud): spec.quota.gpu: unknown field; did you mean gpus?",
		`fraud.yaml: document 1 (team fraud): spec.quota.memory: "lots" is not a quantity (e.g. 64, 500m, 256Gi)`,
		"fraud.yaml: document 2 is a ConfigMap (v1), not a Team (gpuvc.dev/v1alpha1)",
		"ops.json: document 1 (team ops): apiVersion is missing (want gpuvc.dev/v1alpha1)",
		`ops.json: document 1 (team ops): spec.quota.gpus: "four" is a string, want an integer`,
		"5 problems in 2 files; nothing was applied",
	} {
		require.Contains(t, r.errOut, want)
	}
	require.Empty(t, r.out, "nothing is applied")

	r = gpuvc(t, "team", "apply", "-R", "-f", dir)
	require.Equal(t, 1, r.code)
	require.NotContains(t, r.errOut, "skipped subfolder")
	require.Contains(t, r.errOut, `old.yaml: document 1 (team old): spec.quota.pods: "many" is a string, want an integer`)
	require.Contains(t, r.errOut, "6 problems in 3 files; nothing was applied")
}

// TestApplyAppliesNothingWhenOneTeamIsInvalid: a value the API server would refuse
// in one file keeps the good teams of the other files from being applied.
func TestApplyAppliesNothingWhenOneTeamIsInvalid(t *testing.T) {
	integration(t)
	dir := t.TempDir()
	writeFile(t, dir, "good.yaml", twoTeams)
	writeFile(t, dir, "bad.yaml", "apiVersion: gpuvc.dev/v1alpha1\nkind: Team\nmetadata: {name: bad}\n"+
		"spec: {pool: a100, quota: {}, network: {allowedEgressCIDRs: [10.0.0.0/33]}}\n")
	t.Cleanup(func() { gpuvc(t, "team", "delete", "lab", "ads", "bad") })

	r := gpuvc(t, "team", "apply", "-f", dir)
	require.Equal(t, 1, r.code)
	require.Contains(t, r.errOut, `bad.yaml: document 1 (team bad): spec.network.allowedEgressCIDRs[0]: Invalid value: "10.0.0.0/33"`)
	require.Contains(t, r.errOut, "1 problem in 1 file; nothing was applied")
	for _, name := range []string{"lab", "ads", "bad"} {
		r = gpuvc(t, "team", "get", name)
		require.Equal(t, 1, r.code, "team %s was applied", name)
		require.Contains(t, r.errOut, "not found")
	}
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
