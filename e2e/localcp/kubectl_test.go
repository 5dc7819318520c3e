package localcp_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuvc/gpuvc/charts"
	"github.com/gpuvc/gpuvc/e2e/localcp"
	"github.com/gpuvc/gpuvc/e2e/testsupport/gpuvcbin"
	"github.com/gpuvc/gpuvc/e2e/testsupport/poll"
)

// TestKubectlTalksToTheControlPlane: the manifest's kubectl lists the control
// plane's namespaces.
func TestKubectlTalksToTheControlPlane(t *testing.T) {
	cp := localcp.ForTest(t)
	ctx := poll.TestContext(t)
	out, errOut, err := gpuvcbin.Run(ctx, localcp.Kubectl(t), "--kubeconfig", cp.Kubeconfig, "get", "namespaces", "--no-headers")
	if err != nil || !strings.Contains(out, "kube-system") {
		t.Errorf("kubectl get namespaces: %v\n%s%s", err, out, errOut)
	}
}

// TestKubectlPlugin: the gpuvc binary on PATH as kubectl-gpuvc is found by the
// real kubectl and answers `kubectl gpuvc ...` against the cluster kubectl's
// --kubeconfig names, with usage in its own words.
func TestKubectlPlugin(t *testing.T) {
	cp := localcp.ForTest(t)
	ctx := poll.TestContext(t)
	if err := charts.InstallCRDs(ctx, cp.Config); err != nil {
		t.Fatal(err)
	}
	bin := gpuvcbin.BuildForTest(t, ctx)
	dir := t.TempDir()
	if err := os.Symlink(bin, filepath.Join(dir, "kubectl-gpuvc")); err != nil {
		t.Fatal(err)
	}
	kubectl := func(args ...string) (string, error) {
		cmd := exec.CommandContext(ctx, localcp.Kubectl(t), args...)
		cmd.Env = append(os.Environ(), "PATH="+dir+string(os.PathListSeparator)+os.Getenv("PATH"))
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if out, err := kubectl("plugin", "list"); err != nil || !strings.Contains(out, filepath.Join(dir, "kubectl-gpuvc")) {
		t.Errorf("kubectl plugin list: %v\n%s", err, out)
	}
	if out, err := kubectl("gpuvc", "team", "list", "--kubeconfig", cp.Kubeconfig); err != nil || strings.Contains(out, "Error") {
		t.Errorf("kubectl gpuvc team list: %v\n%s", err, out)
	}
	if out, err := kubectl("gpuvc", "team", "--help"); err != nil || !strings.Contains(out, "kubectl gpuvc team") {
		t.Errorf("kubectl gpuvc team --help: %v\n%s", err, out)
	}
}
