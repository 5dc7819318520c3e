package team

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	gpuvcv1 "github.com/gpuvc/gpuvc/api/v1alpha1"
	"github.com/gpuvc/gpuvc/manager/teamctl"
)

// TestPrintedTeamsApplyAgain: what -o yaml prints carries apiVersion and kind, no
// managedFields, and reads back as a Team without a problem.
func TestPrintedTeamsApplyAgain(t *testing.T) {
	tm := fraudTeam()
	tm.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "gpuvc-cli", Operation: "Apply"}}
	tm.UID, tm.ResourceVersion = "0b9c", "42"

	out, err := yaml.Marshal(printable(tm))
	require.NoError(t, err)
	require.Contains(t, string(out), "apiVersion: gpuvc.dev/v1alpha1\nkind: Team\n")
	require.NotContains(t, string(out), "managedFields")
	require.NotEmpty(t, tm.ManagedFields, "the caller's Team is left alone")
	teams, _, err := teamctl.ReadTeams([]string{"-"}, false, bytes.NewReader(out))
	require.NoError(t, err)
	require.Equal(t, tm.Spec, teams[0].Spec)

	out, err = yaml.Marshal(printableList(&gpuvcv1.TeamList{Items: []gpuvcv1.Team{*tm}}))
	require.NoError(t, err)
	require.Contains(t, string(out), "apiVersion: gpuvc.dev/v1alpha1\nitems:\n- apiVersion: gpuvc.dev/v1alpha1\n  kind: Team\n")
	require.Contains(t, string(out), "kind: TeamList\n")
	require.NotContains(t, string(out), "managedFields")
	teams, _, err = teamctl.ReadTeams([]string{"-"}, false, bytes.NewReader(out))
	require.NoError(t, err)
	require.Len(t, teams, 1)
}
