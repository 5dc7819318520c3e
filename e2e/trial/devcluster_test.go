package trial

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuvc/gpuvc/e2e/localcp"
	"github.com/gpuvc/gpuvc/e2e/testsupport/gpuvcbin"
)

// TestDevClusterWithRealNode: as root `gpuvc dev cluster up` starts the real
// node by default, so gpuvc installed with the values file it writes makes a
// team Ready with a kubeconfig that works; down leaves nothing.
func TestDevClusterWithRealNode(t *testing.T) {
	ctx, gpuvc := prepare(t, "the real node needs root; without root `gpuvc dev cluster up` runs kwok nodes only (tested in cmd/gpuvc/commands/dev)")
	dir := filepath.Join(t.TempDir(), "cluster")
	out, errOut, err := gpuvcbin.Run(ctx, gpuvc, "dev", "cluster", "up", "--dir", dir)
	t.Cleanup(func() {
		if _, errOut, err := gpuvcbin.Run(ctx, gpuvc, "dev", "cluster", "down", "--dir", dir); err != nil {
			t.Errorf("dev cluster down: %v\n%s", err, errOut)
		}
		nothingLeft(t, ctx, dir)
	})
	if err != nil {
		t.Fatalf("dev cluster up: %v\n%s", err, errOut)
	}
	if !strings.Contains(errOut, "system/system-0 (real)") || !strings.Contains(errOut, "a100/a100-0") {
		t.Errorf("up does not list the real node and the kwok nodes:\n%s", errOut)
	}
	kubeconfig := strings.TrimSpace(strings.TrimPrefix(out, "export KUBECONFIG="))
	host := func(args ...string) string {
		t.Helper()
		out, errOut, err := gpuvcbin.Run(ctx, gpuvc, append([]string{"--kubeconfig", kubeconfig}, args...)...)
		if err != nil {
			t.Fatalf("gpuvc %v: %v\n%s\n%s", args, err, out, errOut)
		}
		return out + errOut
	}
	host("install", "-f", filepath.Join(dir, "values.yaml"), "--wait", "--timeout", "5m")
	t.Logf("team create --wait:\n%s", host("team", "create", "demo", "--pool", "system", "--gpus", "1", "--wait", "--timeout", "5m"))
	teamFile := filepath.Join(t.TempDir(), "demo.kubeconfig")
	host("team", "kubeconfig", "demo", "-f", teamFile)
	got, errOut, err := gpuvcbin.Run(ctx, localcp.Kubectl(t), "--kubeconfig", teamFile, "get", "namespaces", "--no-headers")
	if err != nil || !strings.Contains(got, "kube-system") {
		slices, _, _ := gpuvcbin.Run(ctx, localcp.Kubectl(t), "--kubeconfig", kubeconfig, "-n", "team-demo", "get", "endpointslices,pods", "-o", "wide")
		t.Errorf("the team kubeconfig does not work: %v\n%s%s\nthe team's host objects:\n%s", err, got, errOut, slices)
	}
}
