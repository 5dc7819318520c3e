package nodeagent_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuvc/gpuvc/api/contract"
	"github.com/gpuvc/gpuvc/e2e/localcp"
	"github.com/gpuvc/gpuvc/e2e/testsupport/poll"
	"github.com/gpuvc/gpuvc/gpu/dra"
	"github.com/gpuvc/gpuvc/gpu/inventory"
	"github.com/gpuvc/gpuvc/gpu/nodeagent"
)

// The agent as `gpuvc agent --simulate …,dra=2 --dra` runs it, with the
// publication's RBAC and the plugin's (dra.RBACRules), on a node without a kubelet: it registers its plugin
// in the kubelet folder and publishes the node's ResourceSlice with the two
// GPUs the spec hands to DRA, under NVIDIA's driver name.
func TestAgentRunPublishesTheDRASlice(t *testing.T) {
	cp := localcp.ForTest(t)
	ctx := poll.TestContext(t)
	const nodeName = "a100-0"
	kubeconfig, _ := boundIdentity(ctx, t, cp, "gpuvc-agent-dra", append(nodeagent.RBACRules("", ""), dra.RBACRules()...))
	t.Cleanup(func() { resetNode(context.Background(), t, cp, nodeName) })
	t.Cleanup(func() {
		_ = cp.Client.ResourceV1().ResourceSlices().DeleteCollection(context.Background(), metav1.DeleteOptions{},
			metav1.ListOptions{FieldSelector: "spec.nodeName=" + nodeName})
	})
	kubeletDir, cdiDir := t.TempDir(), t.TempDir()

	runCtx, stop := context.WithCancel(ctx)
	var out, errOut bytes.Buffer
	o := nodeagent.Options{NodeName: nodeName, Simulated: simulated(t, "product=NVIDIA-A100-SXM4-80GB,count=8,dra=2"), Interval: time.Hour,
		Strategy: inventory.StrategyMixed, GFD: nodeagent.GFDAuto, Out: &out,
		DRA: true, KubeletDir: kubeletDir, CDIDir: cdiDir}
	ran := make(chan error, 1)
	go func() { ran <- runAgent(runCtx, kubeconfig, &errOut, o) }()

	var names []string
	poll.UntilSeen(ctx, t, 30*time.Second, "the node's DRA ResourceSlice", func(ctx context.Context) (bool, string, error) {
		list, err := cp.Client.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + nodeName})
		if err != nil {
			return false, "", err
		}
		names = nil
		for _, s := range list.Items {
			if s.Spec.Driver != contract.DRADriver || s.Spec.Pool.Name != nodeName {
				return false, "", fmt.Errorf("slice %s: driver %s pool %s", s.Name, s.Spec.Driver, s.Spec.Pool.Name)
			}
			for _, d := range s.Spec.Devices {
				names = append(names, d.Name)
			}
		}
		return len(names) == 2, fmt.Sprintf("devices %v; agent log: %s", names, errOut.String()), nil
	})
	sort.Strings(names)
	require.Equal(t, []string{"gpu-6", "gpu-7"}, names)
	_, err := os.Stat(filepath.Join(kubeletDir, "plugins_registry", contract.DRADriver+"-reg.sock"))
	require.NoError(t, err, "the plugin's registration socket, where the kubelet looks for it")
	stop()
	require.NoError(t, <-ran, errOut.String())
}
