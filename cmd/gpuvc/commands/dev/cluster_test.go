package dev_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/gpuvc/gpuvc/cmd/gpuvc/commands/cli"
	"github.com/gpuvc/gpuvc/cmd/gpuvc/commands/root"
	"github.com/gpuvc/gpuvc/kind/localcluster"
	"github.com/gpuvc/gpuvc/kind/localstack"
)

func run(args ...string) (string, string, int) {
	var out, errOut bytes.Buffer
	cmd := root.NewCommand(cli.Streams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut})
	cmd.SetArgs(args)
	code := cli.Run(cmd)
	return out.String(), errOut.String(), code
}

// TestDevClusterUpEnvDown: up starts a detached control plane whose kubeconfig
// works, env prints it, down stops every process and is idempotent.
func TestDevClusterUpEnvDown(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a local control plane")
	}
	dir := t.TempDir() + "/cluster"
	out, errOut, code := run("dev", "cluster", "up", "--kwok-only", "--dir", dir)
	require.Equal(t, 0, code, errOut)
	t.Cleanup(func() { run("dev", "cluster", "down", "--dir", dir) })
	require.True(t, strings.HasPrefix(out, "export KUBECONFIG="), out)
	kubeconfig := strings.TrimSpace(strings.TrimPrefix(out, "export KUBECONFIG="))

	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	require.NoError(t, err)
	cs, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	nodes, err := cs.CoreV1().Nodes().List(t.Context(), metav1.ListOptions{LabelSelector: "gpuvc.dev/pool=a100"})
	require.NoError(t, err)
	require.Len(t, nodes.Items, 2)

	out, _, code = run("dev", "cluster", "env", "--dir", dir)
	require.Equal(t, 0, code)
	require.Equal(t, "export KUBECONFIG="+kubeconfig+"\n", out)
	_, errOut, code = run("dev", "cluster", "up", "--dir", dir)
	require.Equal(t, 0, code)
	require.Contains(t, errOut, "already running")

	state, err := localcluster.ReadState(localstack.ClusterDir(dir))
	require.NoError(t, err)
	_, _, code = run("dev", "cluster", "down", "--dir", dir)
	require.Equal(t, 0, code)
	for name, pid := range state.PIDs {
		require.False(t, localcluster.Alive(pid), "%s (pid %d) survived down", name, pid)
	}
	_, errOut, code = run("dev", "cluster", "env", "--dir", dir)
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "no local control plane is running")
	_, _, code = run("dev", "cluster", "down", "--dir", dir)
	require.Equal(t, 0, code, "down twice succeeds")
}

func TestKindConfigPrintsAClusterConfig(t *testing.T) {
	out, errOut, code := run("dev", "kind-config")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "kind: Cluster")
	require.Contains(t, out, "apiVersion: kind.x-k8s.io/v1alpha4")
	require.Equal(t, 3, strings.Count(out, "role: worker"))
	require.Contains(t, out, "gpuvc.dev/pool: h100")
	require.Contains(t, out, "name: a100-0")
}
