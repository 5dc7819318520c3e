package teamctl

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const teamHeader = "apiVersion: gpuvc.dev/v1alpha1\nkind: Team\nmetadata: {name: fraud}\n"

// TestDecodeTeamsNamesFieldAndValue: every problem names the file, the document, the
// team, the field path and the value, and all problems of a document are listed.
func TestDecodeTeamsNamesFieldAndValue(t *testing.T) {
	cases := map[string]struct {
		doc  string
		want []string
	}{
		"typo with suggestion": {teamHeader + "spec: {pool: a100, quota: {gpu: 4}}\n",
			[]string{"fraud.yaml: document 1 (team fraud): spec.quota.gpu: unknown field; did you mean gpus?"}},
		"no obvious suggestion": {teamHeader + "spec: {pool: a100, quota: {}, colour: red}\n",
			[]string{"fraud.yaml: document 1 (team fraud): spec.colour: unknown field"}},
		"wrong case is a typo": {teamHeader + "spec: {pool: a100, quota: {}, maxGpusPerPod: 2}\n",
			[]string{"spec.maxGpusPerPod: unknown field; did you mean maxGPUsPerPod?"}},
		"not a quantity": {teamHeader + "spec: {pool: a100, quota: {memory: lots}}\n",
			[]string{`fraud.yaml: document 1 (team fraud): spec.quota.memory: "lots" is not a quantity (e.g. 64, 500m, 256Gi)`}},
		"string for integer": {teamHeader + "spec: {pool: a100, quota: {gpus: four}}\n",
			[]string{`spec.quota.gpus: "four" is a string, want an integer`}},
		"fraction for integer": {teamHeader + "spec: {pool: a100, quota: {gpus: 1.5}}\n",
			[]string{`spec.quota.gpus: 1.5 is not a whole number`}},
		"map value": {teamHeader + "spec: {pool: a100, quota: {mig: {1g.10gb: many}}}\n",
			[]string{`spec.quota.mig[1g.10gb]: "many" is a string, want an integer`}},
		"list item": {teamHeader + "spec: {pool: a100, quota: {}, members: [{kind: User, nme: ana}]}\n",
			[]string{`spec.members[0].nme: unknown field; did you mean name?`}},
		"object for list": {teamHeader + "spec: {pool: a100, quota: {}, members: {kind: User}}\n",
			[]string{`spec.members: an object, want a list`}},
		"boolean": {teamHeader + "spec: {pool: a100, quota: {}, network: {defaultDeny: maybe}}\n",
			[]string{`spec.network.defaultDeny: "maybe" is a string, want true or false`}},
		"metadata field": {"apiVersion: gpuvc.dev/v1alpha1\nkind: Team\nmetadata: {name: fraud, label: {a: b}}\nspec: {pool: a100, quota: {}}\n",
			[]string{`metadata.label: unknown field; did you mean labels?`}},
		"every problem": {teamHeader + "spec: {pool: a100, quota: {gpu: 4, memory: lots}}\n",
			[]string{"spec.quota.gpu: unknown field", `spec.quota.memory: "lots" is not a quantity`}},
		"other kind": {"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndata: {a: b}\n",
			[]string{"fraud.yaml: document 1 is a ConfigMap (v1), not a Team (gpuvc.dev/v1alpha1)"}},
		"no apiVersion": {"kind: Team\nmetadata: {name: fraud}\nspec: {pool: a100, quota: {}}\n",
			[]string{"fraud.yaml: document 1 (team fraud): apiVersion is missing (want gpuvc.dev/v1alpha1)"}},
		"wrong apiVersion": {"apiVersion: gpuvc.dev/v1\nkind: Team\nmetadata: {name: fraud}\nspec: {pool: a100, quota: {}}\n",
			[]string{`fraud.yaml: document 1 (team fraud): apiVersion "gpuvc.dev/v1" is not gpuvc.dev/v1alpha1`}},
		"no kind": {"apiVersion: gpuvc.dev/v1alpha1\nmetadata: {name: fraud}\nspec: {pool: a100, quota: {}}\n",
			[]string{"fraud.yaml: document 1 (team fraud): kind is missing (want Team)"}},
		"second document": {teamHeader + "spec: {pool: a100, quota: {}}\n---\n" + strings.ReplaceAll(teamHeader, "fraud", "ads") + "spec: {pool: a100, quota: {gpus: x}}\n",
			[]string{`fraud.yaml: document 2 (team ads): spec.quota.gpus: "x" is a string, want an integer`}},
		"not an object": {"- a\n- b\n", []string{"fraud.yaml: document 1 is a list, not a Team object"}},
		"dra class typo": {teamHeader + "spec: {pool: a100, quota: {}, dra: {deviceClass: [gpu.nvidia.com]}}\n",
			[]string{"spec.dra.deviceClass: unknown field; did you mean deviceClasses?"}},
		"no name": {"apiVersion: gpuvc.dev/v1alpha1\nkind: Team\nspec: {pool: a}\n", []string{"fraud.yaml: document 1: metadata.name is required"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			teams, problems := decodeTeams("fraud.yaml", []byte(tc.doc))
			require.Len(t, problems, len(tc.want), "%q", problems)
			for i, want := range tc.want {
				require.Contains(t, problems[i], want)
			}
			if name != "second document" {
				require.Empty(t, teams)
			}
		})
	}
}

func TestDecodeTeamsAcceptsValidTeamsAndTeamLists(t *testing.T) {
	list := `{"apiVersion": "gpuvc.dev/v1alpha1", "kind": "TeamList", "metadata": {}, "items": [
	  {"apiVersion": "gpuvc.dev/v1alpha1", "kind": "Team", "metadata": {"name": "a", "uid": "0b9c", "resourceVersion": "42", "finalizers": ["gpuvc.dev/team-cleanup"], "creationTimestamp": "2026-01-02T03:04:05Z"},
	   "spec": {"pool": "a100", "quota": {"gpus": 2, "memory": "64Gi"}, "vcluster": {"values": {"anything": [1, {"x": null}]}}},
	   "status": {"namespace": "team-a", "conditions": [{"type": "Ready", "status": "True", "reason": "Ready", "message": "", "lastTransitionTime": "2026-01-02T03:04:05Z"}]}},
	  {"apiVersion": "gpuvc.dev/v1alpha1", "kind": "Team", "metadata": {"name": "b"}, "spec": {"pool": "h100", "quota": {}}}]}`
	teams, problems := decodeTeams("all.json", []byte(list))
	require.Empty(t, problems)
	require.Len(t, teams, 2)
	require.Equal(t, "a", teams[0].Name)
	require.Equal(t, "64Gi", teams[0].Spec.Quota.Memory.String())
	// What the API server owns is not sent back, so saved output applies again.
	require.Empty(t, teams[0].UID)
	require.Empty(t, teams[0].ResourceVersion)
	require.Empty(t, teams[0].Finalizers)
	require.True(t, teams[0].CreationTimestamp.IsZero())
	require.Empty(t, teams[0].Status.Conditions)
	require.Equal(t, "b", teams[1].Name)

	example, err := os.ReadFile("../../docs/examples/fraud.yaml")
	require.NoError(t, err)
	teams, problems = decodeTeams("fraud.yaml", example)
	require.Empty(t, problems)
	require.Len(t, teams, 1)
}

// TestReadTeamsListsEveryBadFile: a folder with several bad files reports each of
// them, and subfolders are walked only with recursive, otherwise reported skipped.
func TestReadTeamsListsEveryBadFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) {
		p := filepath.Join(dir, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	}
	write("a.yaml", teamHeader+"spec: {pool: a100, quota: {gpu: 1}}\n")
	write("b.yml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n")
	write("c.json", `{"apiVersion": "gpuvc.dev/v1alpha1", "kind": "Team", "metadata": {"name": "c"}, "spec": {"pool": "a100", "quota": {}}}`)
	write("notes.txt", "ignored")
	write(".git/x.yaml", "not: a team")
	write("old/d.yaml", strings.ReplaceAll(teamHeader, "fraud", "d")+"spec: {pool: a100, quota: {pods: lots}}\n")

	_, skipped, err := ReadTeams([]string{dir}, false, nil)
	require.Equal(t, []string{filepath.Join(dir, "old") + "/"}, skipped)
	var me *manifestError
	require.ErrorAs(t, err, &me)
	require.Len(t, me.problems, 2, err.Error())
	require.Contains(t, err.Error(), "a.yaml: document 1 (team fraud): spec.quota.gpu: unknown field")
	require.Contains(t, err.Error(), "b.yml: document 1 is a ConfigMap (v1)")
	require.Contains(t, err.Error(), "2 problems in 2 files")

	_, skipped, err = ReadTeams([]string{dir}, true, nil)
	require.Empty(t, skipped)
	require.ErrorAs(t, err, &me)
	require.Len(t, me.problems, 3, err.Error())
	require.Contains(t, err.Error(), `d.yaml: document 1 (team d): spec.quota.pods: "lots" is a string, want an integer`)

	teams, _, err := ReadTeams([]string{filepath.Join(dir, "c.json")}, false, nil)
	require.NoError(t, err)
	require.Len(t, teams, 1)
}
