package team_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"

	gpuvcv1 "github.com/gpuvc/gpuvc/api/v1alpha1"
	"github.com/gpuvc/gpuvc/e2e/testsupport/managertest"
)

func TestCreateDryRunPrintsTheTeam(t *testing.T) {
	r := gpuvc(t, "team", "create", "fraud", "--pool", "a100", "--gpus", "4", "--mig", "1g.10gb=4",
		"--fractions", "--member", "Group:fraud-ml", "--max-gpus-per-pod", "2", "--memory", "256Gi", "--dry-run=client")
	require.Equal(t, 0, r.code, r.errOut)
	got := &gpuvcv1.Team{}
	require.NoError(t, yaml.UnmarshalStrict([]byte(r.out), got))
	require.Equal(t, "Team", got.Kind)
	require.Equal(t, "a100", got.Spec.Pool)
	require.EqualValues(t, 4, *got.Spec.Quota.GPUs)
	require.Equal(t, map[string]int32{"1g.10gb": 4}, got.Spec.Quota.MIG)
	require.True(t, got.Spec.GPUSharing.Fractions)
	require.Equal(t, []gpuvcv1.Member{{Kind: "Group", Name: "fraud-ml"}}, got.Spec.Members)
	require.Equal(t, "256Gi", got.Spec.Quota.Memory.String())

	require.Nil(t, got.Spec.DRA, "DRA is off unless asked for")

	r = gpuvc(t, "team", "create", "fraud", "--pool", "a100", "--gpus", "2", "--device-class", "gpu.example.com", "--dry-run=client")
	require.Equal(t, 0, r.code, r.errOut)
	got = &gpuvcv1.Team{}
	require.NoError(t, yaml.UnmarshalStrict([]byte(r.out), got))
	require.Equal(t, []string{"gpu.example.com"}, got.Spec.DRA.DeviceClasses)

	r = gpuvc(t, "team", "create", "fraud", "--pool", "a100", "--sleep-after", "30m", "--idle-gpu-after", "1h", "--idle-gpu-action", "Sleep", "--idle-gpu-max-utilization", "5", "--dry-run=client")
	require.Equal(t, 0, r.code, r.errOut)
	got = &gpuvcv1.Team{}
	require.NoError(t, yaml.UnmarshalStrict([]byte(r.out), got))
	require.Equal(t, &gpuvcv1.GPUPodIdle{After: metav1.Duration{Duration: time.Hour}, Action: gpuvcv1.IdleActionSleep, MaxUtilizationPercent: 5}, got.Spec.Idle.GPUPods)
	require.Equal(t, 30*time.Minute, got.Spec.Idle.VCluster.SleepAfter.Duration)

	r = gpuvc(t, "team", "create", "fraud", "--pool", "a100", "--dry-run=client", "-o", "json")
	require.Equal(t, 0, r.code, r.errOut)
	require.True(t, strings.HasPrefix(r.out, "{"), r.out)
}

func TestCreateRefusesBadFlagsNamingThem(t *testing.T) {
	cases := map[string]struct {
		args []string
		want string
	}{
		"no pool":              {[]string{"team", "create", "x", "--dry-run"}, `required flag(s) "pool" not set`},
		"no name":              {[]string{"team", "create", "--pool", "a100"}, "accepts 1 arg(s), received 0"},
		"bad mig":              {[]string{"team", "create", "x", "--pool", "a", "--mig", "1g.10gb", "--dry-run"}, `--mig "1g.10gb": want PROFILE=COUNT`},
		"negative mig":         {[]string{"team", "create", "x", "--pool", "a", "--mig", "1g.10gb=-1", "--dry-run"}, "count ≥ 0"},
		"bad member":           {[]string{"team", "create", "x", "--pool", "a", "--member", "Robot:r2", "--dry-run"}, `--member "Robot:r2": want User:NAME or Group:NAME`},
		"bad memory":           {[]string{"team", "create", "x", "--pool", "a", "--memory", "lots", "--dry-run"}, `--memory "lots" is not a quantity`},
		"bad output":           {[]string{"team", "create", "x", "--pool", "a", "--dry-run", "-o", "xml"}, `--output "xml" is not supported`},
		"dra with a bad class": {[]string{"team", "create", "x", "--pool", "a", "--device-class", "GPU_All", "--dry-run"}, "spec.dra.deviceClasses[0]"},
		"unknown flag":         {[]string{"team", "create", "x", "--pool", "a", "--gpu", "1"}, "unknown flag: --gpu"},
		"unknown output":       {[]string{"team", "list", "-o", "csv"}, `--output "csv" is not supported: use one of [table wide yaml json]`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r := gpuvc(t, tc.args...)
			require.Equal(t, 1, r.code)
			require.Contains(t, r.errOut, tc.want)
		})
	}
}

// TestCreateWaitKubeconfigDelete walks a platform engineer's whole path: create and
// wait with progress, fetch the kubeconfig, see the team listed, delete and wait.
func TestCreateWaitKubeconfigDelete(t *testing.T) {
	ctx := integration(t)
	// vCluster would export its kubeconfig once running; kwok runs no container,
	// so the test does it as soon as the namespace exists.
	go func() {
		_ = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			err := managertest.ExportKubeconfig(ctx, host.Client, "vision")
			return err == nil || apierrors.IsAlreadyExists(err), nil
		})
	}()
	r := gpuvc(t, "team", "create", "vision", "--pool", "h100", "--gpus", "2", "--member", "User:vera", "--wait", "--timeout", "2m")
	require.Equal(t, 0, r.code, r.errOut)
	require.Contains(t, r.out, "team/vision created")
	require.Contains(t, r.errOut, "HostResourcesReady: Provisioned", "progress names each step")
	require.Contains(t, r.errOut, "✓ Ready")
	require.Contains(t, r.errOut, "gpuvc team kubeconfig vision -f vision.kubeconfig")

	r = gpuvc(t, "team", "create", "vision", "--pool", "h100")
	require.Equal(t, 1, r.code)
	require.Contains(t, r.errOut, "team vision already exists")

	file := filepath.Join(t.TempDir(), "vision.kubeconfig")
	r = gpuvc(t, "team", "kubeconfig", "vision", "-f", file)
	require.Equal(t, 0, r.code, r.errOut)
	info, err := os.Stat(file)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), info.Mode().Perm())
	cfg, err := clientcmd.LoadFromFile(file)
	require.NoError(t, err)
	require.Equal(t, "https://vision.team-vision.svc", cfg.Clusters[cfg.Contexts[cfg.CurrentContext].Cluster].Server)

	r = gpuvc(t, "team", "kubeconfig", "vision", "--server", "https://127.0.0.1:18443")
	require.Equal(t, 0, r.code, r.errOut)
	cfg, err = clientcmd.Load([]byte(r.out))
	require.NoError(t, err)
	require.Equal(t, "https://127.0.0.1:18443", cfg.Clusters[cfg.Contexts[cfg.CurrentContext].Cluster].Server)

	r = gpuvc(t, "team", "list")
	require.Equal(t, 0, r.code, r.errOut)
	require.Regexp(t, `(?m)^NAME\s+POOL\s+GPUS\s+MIG\s+READY\s+AGE$`, r.out)
	require.Regexp(t, `(?m)^vision\s+h100\s+0/2\s+-\s+True\s+\S+$`, r.out)
	r = gpuvc(t, "team", "list", "-o", "wide")
	require.Regexp(t, `(?m)^vision\s+h100\s+0/2\s+-\s+True\s+\S+\s+team-vision\s+Ready\s+User:vera$`, r.out)

	r = gpuvc(t, "team", "list", "-o", "json")
	require.Equal(t, 0, r.code, r.errOut)
	list := &gpuvcv1.TeamList{}
	require.NoError(t, json.Unmarshal([]byte(r.out), list))
	require.NotEmpty(t, list.Items)
	r = gpuvc(t, "team", "list", "-o", "yaml")
	require.NoError(t, yaml.UnmarshalStrict([]byte(r.out), &gpuvcv1.TeamList{}))
	require.Contains(t, r.out, "name: vision")

	r = gpuvc(t, "team", "get", "vision")
	require.Equal(t, 0, r.code, r.errOut)
	require.Contains(t, r.out, "Namespace:   team-vision")
	require.Contains(t, r.out, "Kubeconfig:  secret team-vision/gpuvc-kubeconfig")
	require.Regexp(t, `KubeconfigReady\s+True\s+Exported`, r.out)
	r = gpuvc(t, "team", "get", "vision", "-o", "yaml")
	got := &gpuvcv1.Team{}
	require.NoError(t, yaml.Unmarshal([]byte(r.out), got))
	require.Equal(t, "team-vision", got.Status.Namespace)

	r = gpuvc(t, "team", "delete", "vision", "--wait", "--timeout", "2m")
	require.Equal(t, 0, r.code, r.errOut)
	require.Contains(t, r.out, "team/vision deleted")
	_, err = host.Client.CoreV1().Namespaces().Get(ctx, "team-vision", metav1.GetOptions{})
	require.True(t, apierrors.IsNotFound(err), "namespace left behind: %v", err)

	r = gpuvc(t, "team", "delete", "vision")
	require.Equal(t, 0, r.code, "deleting a missing team succeeds, like rm -f")
	require.Contains(t, r.out, "team/vision not found (nothing to delete)")
	r = gpuvc(t, "team", "get", "vision")
	require.Equal(t, 1, r.code)
	require.Contains(t, r.errOut, "team vision: not found")
}

func TestKubeconfigBeforeReadySaysWhy(t *testing.T) {
	integration(t)
	r := gpuvc(t, "team", "create", "early", "--pool", "a100")
	require.Equal(t, 0, r.code, r.errOut)
	t.Cleanup(func() { gpuvc(t, "team", "delete", "early", "--wait", "--timeout", "1m") }) // the next test may reuse the names
	r = gpuvc(t, "team", "kubeconfig", "early")
	require.Equal(t, 1, r.code)
	require.Contains(t, r.errOut, "team early has no kubeconfig yet")
}
