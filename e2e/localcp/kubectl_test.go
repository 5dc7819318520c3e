package localcp_test

import (
	"strings"
	"testing"

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
