package localcp_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/gpuvc/gpuvc/e2e/localcp"
	"github.com/gpuvc/gpuvc/e2e/testsupport/poll"
	"github.com/gpuvc/gpuvc/e2e/testsupport/testobj"
	"github.com/gpuvc/gpuvc/kind/localcluster"
)

func TestSecondControlPlaneIsIndependent(t *testing.T) {
	cp := localcp.ForTest(t)
	ctx := poll.TestContext(t)
	virtual, err := localcp.Start(ctx, localcluster.Options{APIOnly: true})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, virtual.Stop()) })
	require.NotEqual(t, cp.Server, virtual.Server)

	_, err = virtual.Client.CoreV1().Namespaces().Create(ctx, testobj.Namespace("only-in-virtual", nil), metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = cp.Client.CoreV1().Namespaces().Get(ctx, "only-in-virtual", metav1.GetOptions{})
	require.True(t, apierrors.IsNotFound(err), "namespace leaked into the host control plane: %v", err)
	nodes, err := virtual.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	require.Empty(t, nodes.Items, "an API-only control plane has no nodes")
}

func TestStopLeavesNoProcessOrFolder(t *testing.T) {
	localcp.ForTest(t)
	ctx := poll.TestContext(t)
	cp, err := localcp.Start(ctx, localcluster.Options{APIOnly: true})
	require.NoError(t, err)
	pids := cp.PIDs()
	require.Len(t, pids, 2)
	require.NoError(t, cp.Stop())
	for name, pid := range pids {
		require.False(t, localcluster.Alive(pid), "%s (pid %d) survived Stop", name, pid)
	}
	_, err = os.Stat(cp.Dir)
	require.True(t, os.IsNotExist(err), "temporary folder %s left behind", cp.Dir)
}

const panicHelperEnv = "GPUVC_LOCALCP_PANIC_HELPER"

// TestProcessesDieWhenTestPanics runs this test binary again as a helper that starts a
// control plane, records its PIDs and panics without any cleanup; every component
// must die with it.
func TestProcessesDieWhenTestPanics(t *testing.T) {
	localcp.ForTest(t)
	pidFile := filepath.Join(t.TempDir(), "pids.json")
	cmd := exec.Command(os.Args[0], "-test.run=^TestPanicHelper$", "-test.v")
	cmd.Env = append(os.Environ(), panicHelperEnv+"="+pidFile)
	out, err := cmd.CombinedOutput()
	require.Error(t, err, "the helper must fail by panicking; output:\n%s", out)
	require.Contains(t, string(out), "panic: helper panics with a control plane running")

	b, err := os.ReadFile(pidFile)
	require.NoError(t, err, "helper output:\n%s", out)
	var pids map[string]int
	require.NoError(t, json.Unmarshal(b, &pids))
	require.Len(t, pids, 2)
	err = wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, 20*time.Second, true, func(context.Context) (bool, error) {
		for _, pid := range pids {
			if localcluster.Alive(pid) {
				return false, nil
			}
		}
		return true, nil
	})
	require.NoError(t, err, "components outlived the panicking test: %v", pids)
}

func TestPanicHelper(t *testing.T) {
	pidFile := os.Getenv(panicHelperEnv)
	if pidFile == "" {
		t.Skip("helper for TestProcessesDieWhenTestPanics")
	}
	// The folder sits in the parent test's temporary folder, which the parent removes.
	dir := filepath.Join(filepath.Dir(pidFile), "cp")
	cp, err := localcp.Start(context.Background(), localcluster.Options{APIOnly: true, Dir: dir})
	require.NoError(t, err)
	b, _ := json.Marshal(cp.PIDs())
	require.NoError(t, os.WriteFile(pidFile, b, 0o644))
	panic("helper panics with a control plane running")
}
