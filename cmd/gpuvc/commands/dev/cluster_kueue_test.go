package dev_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/gpuvc/gpuvc/api/contract"
	"github.com/gpuvc/gpuvc/kind/localcluster"
	"github.com/gpuvc/gpuvc/kind/localkueue"
	"github.com/gpuvc/gpuvc/kind/localstack"
)

// TestDevClusterUpWithKueue: `up --kueue` runs the prebuilt Kueue beside the
// control plane, so `gpuvc install --kueue=require` finds it; down stops it.
func TestDevClusterUpWithKueue(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a local control plane and Kueue")
	}
	if os.Geteuid() != 0 {
		t.Skip("Kueue v0.17 reads its metrics certificate from /etc/kueue: needs root")
	}
	dir := t.TempDir() + "/cluster"
	out, errOut, code := run("dev", "cluster", "up", "--kwok-only", "--kueue", "--dir", dir)
	require.Equal(t, 0, code, errOut)
	t.Cleanup(func() { run("dev", "cluster", "down", "--dir", dir) })
	require.Contains(t, errOut, "kueue "+localcluster.KueueVersion+": running")
	kubeconfig := strings.TrimSpace(strings.TrimPrefix(out, "export KUBECONFIG="))
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	require.NoError(t, err)
	_, err = kubernetes.NewForConfigOrDie(cfg).Discovery().ServerResourcesForGroupVersion("kueue.x-k8s.io/v1beta2")
	require.NoError(t, err, "Kueue's API")
	// Kueue runs as its own ServiceAccount, the user gpuvc's webhook lets lift
	// its admission gate (the manager's default --kueue-user).
	_, err = kubernetes.NewForConfigOrDie(cfg).CoreV1().ServiceAccounts(localkueue.DefaultNamespace).Get(context.Background(), localkueue.ServiceAccount, metav1.GetOptions{})
	require.NoError(t, err, "Kueue's ServiceAccount")
	require.Equal(t, contract.KueueDefaultUser, localkueue.User(localkueue.DefaultNamespace))
	require.FileExists(t, filepath.Join(localstack.KueueDir(dir), "kueue.kubeconfig"))

	out, errOut, code = run("install", "--kubeconfig", kubeconfig, "--kueue=require", "--set", "certManager.enabled=false")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "Kueue: Kueue found: kueue.x-k8s.io/v1beta2 served")

	b, err := os.ReadFile(filepath.Join(localstack.KueueDir(dir), "pid"))
	require.NoError(t, err)
	pid, err := strconv.Atoi(string(b))
	require.NoError(t, err)
	require.True(t, localcluster.Alive(pid))
	_, errOut, code = run("dev", "cluster", "down", "--dir", dir)
	require.Equal(t, 0, code, errOut)
	require.False(t, localcluster.Alive(pid), "Kueue (pid %d) survived down", pid)
}
