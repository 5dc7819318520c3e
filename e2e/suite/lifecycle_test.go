package suite

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/clientcmd"
)

// exportWhenNamespaceExists stands in for vCluster exporting the kubeconfig as soon
// as the team namespace exists (local backend), while `team create --wait` waits.
func exportWhenNamespaceExists(ctx context.Context, team string) {
	go func() {
		_ = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
			err := backend.ExportKubeconfig(ctx, team)
			return err == nil || apierrors.IsAlreadyExists(err), nil
		})
	}()
}

func TestBinaryVersion(t *testing.T) {
	e2e(t)
	r := gpuvc(t, "version", "-o", "json")
	require.Equal(t, 0, r.code, r.errOut)
	var info struct{ ClientGoVersion string }
	require.NoError(t, json.Unmarshal([]byte(r.out), &info))
	require.Regexp(t, `^v0\.36\.\d+$`, info.ClientGoVersion)
}

// TestTeamLifecycle: create with --wait, kubeconfig, list, delete --wait, and
// nothing of the team is left on the host.
func TestTeamLifecycle(t *testing.T) {
	ctx := e2e(t)
	exportWhenNamespaceExists(ctx, "life")
	r := gpuvc(t, "team", "create", "life", "--pool", "a100", "--gpus", "2", "--mig", "1g.10gb=2", "--wait", "--timeout", "3m")
	require.Equal(t, 0, r.code, "stdout: %s\nstderr: %s", r.out, r.errOut)
	require.Contains(t, r.errOut, "✓ Ready")

	kubeconfig := t.TempDir() + "/life.kubeconfig"
	r = gpuvc(t, "team", "kubeconfig", "life", "-f", kubeconfig)
	require.Equal(t, 0, r.code, r.errOut)
	cfg, err := clientcmd.LoadFromFile(kubeconfig)
	require.NoError(t, err)
	require.Equal(t, "life", cfg.CurrentContext)
	if backend.RunsContainers() {
		// The team's own API server answers through this kubeconfig.
		vc := teamClient(t, kubeconfig)
		eventually(ctx, t, "the team's API server lists its namespaces", func(ctx context.Context) (bool, string) {
			_, err := vc.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
			return err == nil, fmt.Sprint(err)
		})
	} else {
		t.Log("local backend: no container runs, so the team's vCluster API server is not served; its kubeconfig is checked for shape only")
	}

	r = gpuvc(t, "team", "list", "-o", "wide")
	require.Regexp(t, `(?m)^life\s+a100\s+0/2\s+1g.10gb 0/2\s+True`, r.out)

	r = gpuvc(t, "team", "delete", "life", "--wait", "--timeout", "3m")
	require.Equal(t, 0, r.code, r.errOut)
	assertNothingLeft(ctx, t, "life")
}

// assertNothingLeft checks that no host object of a team survives its deletion.
func assertNothingLeft(ctx context.Context, t *testing.T, team string) {
	t.Helper()
	cs := backend.Client()
	_, err := cs.CoreV1().Namespaces().Get(ctx, "team-"+team, metav1.GetOptions{})
	require.True(t, apierrors.IsNotFound(err), "namespace team-%s left: %v", team, err)
	pods, err := cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{LabelSelector: "gpuvc.dev/team=" + team})
	require.NoError(t, err)
	require.Empty(t, pods.Items, "pods of team %s left", team)
	nss, err := cs.CoreV1().Namespaces().List(ctx, metav1.ListOptions{LabelSelector: "gpuvc.dev/team=" + team})
	require.NoError(t, err)
	require.Empty(t, nss.Items)
}
