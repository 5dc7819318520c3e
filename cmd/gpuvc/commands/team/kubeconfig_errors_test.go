package team_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/client-go/tools/clientcmd"
)

// TestMissingKubeconfigSaysWhereItLookedAndWhatToDo: client-go's own message
// ("try setting KUBERNETES_MASTER") named neither the file nor a way out.
func TestMissingKubeconfigSaysWhereItLookedAndWhatToDo(t *testing.T) {
	t.Setenv("KUBECONFIG", "")

	r := gpuvcAlone(t, "team", "list", "--kubeconfig", "/nonexistent/kubeconfig")
	require.Equal(t, 1, r.code)
	require.Contains(t, r.errOut, "kubeconfig /nonexistent/kubeconfig (from --kubeconfig) cannot be read: no such file or directory")
	require.Contains(t, r.errOut, "gpuvc dev cluster up")

	// client-go fixes the home file when it loads, so this machine's ~/.kube/config
	// is what it reads; the case holds where there is none.
	if _, err := os.Stat(clientcmd.RecommendedHomeFile); os.IsNotExist(err) {
		r = gpuvcAlone(t, "team", "list")
		require.Equal(t, 1, r.code)
		require.Contains(t, r.errOut, "no kubeconfig found (looked at "+clientcmd.RecommendedHomeFile+" (missing))")
		require.NotContains(t, r.errOut, "KUBERNETES_MASTER")
	}

	t.Setenv("KUBECONFIG", "/x/one:/x/two")
	r = gpuvcAlone(t, "team", "get", "fraud")
	require.Equal(t, 1, r.code)
	require.Contains(t, r.errOut, "looked at $KUBECONFIG /x/one (missing), $KUBECONFIG /x/two (missing)")

	empty := filepath.Join(t.TempDir(), "empty")
	require.NoError(t, os.WriteFile(empty, []byte("apiVersion: v1\nkind: Config\n"), 0o600))
	r = gpuvcAlone(t, "team", "list", "--kubeconfig", empty)
	require.Equal(t, 1, r.code)
	require.Contains(t, r.errOut, "kubeconfig "+empty+" (from --kubeconfig) names no cluster")
}
