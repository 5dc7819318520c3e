package nodeagent_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2/textlogger"

	"github.com/gpuvc/gpuvc/api/contract"
	"github.com/gpuvc/gpuvc/e2e/localcp"
	"github.com/gpuvc/gpuvc/e2e/testsupport/identity"
	"github.com/gpuvc/gpuvc/e2e/testsupport/poll"
	"github.com/gpuvc/gpuvc/gpu/inventory"
	"github.com/gpuvc/gpuvc/gpu/nodeagent"
	"github.com/gpuvc/gpuvc/kind/localcluster"
	"github.com/gpuvc/gpuvc/kind/nodepool"
	"github.com/gpuvc/gpuvc/syncer/share"
)

func TestMain(m *testing.M) {
	os.Exit(localcp.RunTests(m, localcluster.Options{}, nil))
}

// agentIdentity creates the agent's ServiceAccount with exactly the RBAC
// docs/agent.md documents (get, patch nodes) and returns a kubeconfig and a
// client authenticated with a token of it.
func agentIdentity(ctx context.Context, t *testing.T, cp *localcluster.ControlPlane) (string, kubernetes.Interface) {
	t.Helper()
	path, client := boundIdentity(ctx, t, cp, "gpuvc-agent",
		[]rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"get", "patch"}}})
	// RBAC takes effect at once, but make the test fail clearly if not.
	_, err := client.CoreV1().Nodes().Get(ctx, "a100-0", metav1.GetOptions{})
	require.NoError(t, err, "the agent's ServiceAccount cannot read nodes")
	return path, client
}

// boundIdentity is the ServiceAccount sa in gpuvc-system bound to exactly
// rules, as the chart binds the agent's: a kubeconfig and a client of it.
func boundIdentity(ctx context.Context, t *testing.T, cp *localcluster.ControlPlane, sa string, rules []rbacv1.PolicyRule) (string, kubernetes.Interface) {
	t.Helper()
	return identity.WithClusterRules(ctx, t, cp.Client, cp.Config, "gpuvc-system", sa, rules)
}

// runAgent runs the agent as `gpuvc agent` does, with the credentials of
// kubeconfig, logging to log.
func runAgent(ctx context.Context, kubeconfig string, log io.Writer, o nodeagent.Options) error {
	o.RESTConfig = func() (*rest.Config, error) { return clientcmd.BuildConfigFromFlags("", kubeconfig) }
	return nodeagent.Run(logr.NewContext(ctx, textlogger.NewLogger(textlogger.NewConfig(textlogger.Output(log)))), o)
}

// simulated is the spec of --simulate s.
func simulated(t *testing.T, s string) *inventory.Spec {
	t.Helper()
	spec, err := nodeagent.ParseSpec(s)
	require.NoError(t, err)
	return &spec
}

// ownedLabels returns the label keys a field manager owns on an object.
func ownedLabels(t *testing.T, node *corev1.Node, manager string) []string {
	t.Helper()
	var keys []string
	for _, mf := range node.ManagedFields {
		if mf.Manager != manager || mf.FieldsV1 == nil {
			continue
		}
		var fields map[string]any
		require.NoError(t, json.Unmarshal(mf.FieldsV1.Raw, &fields))
		meta, _ := fields["f:metadata"].(map[string]any)
		labels, _ := meta["f:labels"].(map[string]any)
		for k := range labels {
			keys = append(keys, strings.TrimPrefix(k, "f:"))
		}
	}
	return keys
}

// resetNode puts a kwok node back as the control plane created it, so the
// tests can run again on one control plane: the agent's fields released,
// GFD's traces and every GPU label the node pool did not set removed, the
// pool's labels restored.
func resetNode(ctx context.Context, t *testing.T, cp *localcluster.ControlPlane, name string) {
	t.Helper()
	var pristine *corev1.Node
	for _, p := range nodepool.Default() {
		for _, n := range p.Nodes {
			if n.Name == name {
				var err error
				pristine, err = localcluster.KwokNode(p, n)
				require.NoError(t, err)
			}
		}
	}
	require.NotNil(t, pristine, "node %s is not in the default pools", name)
	// An empty apply drops everything the agent owns.
	_, err := cp.Client.CoreV1().Nodes().Apply(ctx, corev1ac.Node(name), metav1.ApplyOptions{FieldManager: nodeagent.FieldManager, Force: true})
	require.NoError(t, err)
	cur, err := cp.Client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	require.NoError(t, err)
	labels := map[string]any{}
	for k := range cur.Labels {
		if _, ok := pristine.Labels[k]; !ok && (strings.HasPrefix(k, "nvidia.com/") || k == contract.LabelSimulated) {
			labels[k] = nil
		}
	}
	for k, v := range pristine.Labels {
		labels[k] = v
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
		"labels":      labels,
		"annotations": map[string]any{contract.AnnotationGPUInventory: nil, nodeagent.NFDFeatureLabelsAnnotation: nil},
	}})
	require.NoError(t, err)
	_, err = cp.Client.CoreV1().Nodes().Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: "localcp"})
	require.NoError(t, err)
}

// agentApplyTime is when the agent's managed-fields entry last changed.
func agentApplyTime(node *corev1.Node) *metav1.Time {
	for _, mf := range node.ManagedFields {
		if mf.Manager == nodeagent.FieldManager && mf.Operation == metav1.ManagedFieldsOperationApply {
			return mf.Time
		}
	}
	return nil
}

func TestPublishOnKwokNode(t *testing.T) {
	cp := localcp.ForTest(t)
	ctx := poll.TestContext(t)
	_, saClient := agentIdentity(ctx, t, cp)
	const nodeName = "a100-0"
	resetNode(ctx, t, cp, nodeName)
	t.Cleanup(func() { resetNode(context.Background(), t, cp, nodeName) })
	before, err := cp.Client.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
	require.NoError(t, err)

	spec, err := nodeagent.ParseSpec("product=NVIDIA-A100-SXM4-80GB,count=8")
	require.NoError(t, err)
	spec.Seed = nodeName
	agent := nodeagent.Agent{Source: spec, Publisher: nodeagent.Publisher{Client: saClient, NodeName: nodeName}}

	// 1. First publication: annotation and GFD-style labels.
	start := time.Now()
	res, err := agent.Once(ctx)
	require.NoError(t, err)
	t.Logf("first publication: %v (%v)", res, time.Since(start).Round(time.Millisecond))
	require.True(t, res.Changed)
	require.False(t, res.GFD)
	node, err := cp.Client.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
	require.NoError(t, err)
	var inv inventory.Inventory
	require.NoError(t, json.Unmarshal([]byte(node.Annotations[contract.AnnotationGPUInventory]), &inv))
	want, err := inventory.Simulate(spec)
	require.NoError(t, err)
	require.Empty(t, cmp.Diff(want, inv), "annotation")
	require.Len(t, inv.GPUs, 8)
	wantLabels := map[string]string{
		"gpuvc.dev/simulated":     "true",
		"nvidia.com/gpu.product":  "NVIDIA-A100-SXM4-80GB",
		"nvidia.com/gpu.count":    "8",
		"nvidia.com/gpu.memory":   "81920",
		"nvidia.com/mig.capable":  "true",
		"nvidia.com/mig.strategy": "mixed",
	}
	for k, v := range wantLabels {
		require.Equal(t, v, node.Labels[k], "label %s", k)
	}
	// Labels it does not publish are untouched.
	for _, k := range []string{"gpuvc.dev/pool", "type", "nvidia.com/gpu.present", "kubernetes.io/hostname"} {
		require.Equal(t, before.Labels[k], node.Labels[k], "label %s", k)
	}
	require.ElementsMatch(t, keys(wantLabels), ownedLabels(t, node, nodeagent.FieldManager))

	// 2. A second run changes nothing: no write (the agent's managed-fields
	// entry keeps its time), same labels and annotation. (The node's
	// resourceVersion is no proof: the controller manager writes nodes too.)
	res, err = agent.Once(ctx)
	require.NoError(t, err)
	require.False(t, res.Changed)
	again, err := cp.Client.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
	require.NoError(t, err)
	require.Equal(t, agentApplyTime(node), agentApplyTime(again))
	require.Equal(t, node.Labels, again.Labels)
	require.Equal(t, node.Annotations[contract.AnnotationGPUInventory], again.Annotations[contract.AnnotationGPUInventory])

	// 3. GFD appears (through NFD, which writes with its own field manager) and
	// disagrees with the agent on some labels.
	gfd := map[string]any{"metadata": map[string]any{
		"labels": map[string]string{
			contract.LabelGFDTimestamp: "1767225600",
			"nvidia.com/gpu.product":   "NVIDIA-A100-SXM4-80GB-by-GFD",
			"nvidia.com/gpu.count":     "7",
			"nvidia.com/gpu.family":    "ampere",
		},
		"annotations": map[string]string{
			nodeagent.NFDFeatureLabelsAnnotation: "nvidia.com/gfd.timestamp,nvidia.com/gpu.count,nvidia.com/gpu.family,nvidia.com/gpu.product",
		},
	}}
	raw, err := json.Marshal(gfd)
	require.NoError(t, err)
	_, err = cp.Client.CoreV1().Nodes().Patch(ctx, nodeName, types.MergePatchType, raw, metav1.PatchOptions{FieldManager: "nfd-master"})
	require.NoError(t, err)

	res, err = agent.Once(ctx)
	require.NoError(t, err)
	require.True(t, res.GFD, "GFD not detected")
	require.Contains(t, res.GFDEvidence, contract.LabelGFDTimestamp)
	node, err = cp.Client.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
	require.NoError(t, err)
	// GFD's labels are not clobbered ...
	require.Equal(t, "NVIDIA-A100-SXM4-80GB-by-GFD", node.Labels["nvidia.com/gpu.product"])
	require.Equal(t, "7", node.Labels["nvidia.com/gpu.count"])
	require.Equal(t, "ampere", node.Labels["nvidia.com/gpu.family"])
	require.Equal(t, "1767225600", node.Labels[contract.LabelGFDTimestamp])
	// ... labels only the agent had set are withdrawn; one the node's creator
	// also set stays; the annotation and the simulated marker stay.
	require.NotContains(t, node.Labels, "nvidia.com/mig.strategy")
	require.NotContains(t, node.Labels, "nvidia.com/mig.capable")
	require.Equal(t, "81920", node.Labels["nvidia.com/gpu.memory"])
	require.Equal(t, "true", node.Labels["gpuvc.dev/simulated"])
	require.NotEmpty(t, node.Annotations[contract.AnnotationGPUInventory])
	require.ElementsMatch(t, []string{"gpuvc.dev/simulated"}, ownedLabels(t, node, nodeagent.FieldManager))

	// 4. And again nothing changes.
	res, err = agent.Once(ctx)
	require.NoError(t, err)
	require.False(t, res.Changed)
	again, err = cp.Client.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
	require.NoError(t, err)
	require.Equal(t, agentApplyTime(node), agentApplyTime(again))
}

// The agent refuses to create a Node and says which name was wrong; its
// ServiceAccount can do nothing else.
func TestPublishUnknownNode(t *testing.T) {
	cp := localcp.ForTest(t)
	ctx := poll.TestContext(t)
	_, saClient := agentIdentity(ctx, t, cp)
	agent := nodeagent.Agent{
		Source:    inventory.Spec{Product: "NVIDIA-A100-SXM4-80GB", Count: 1},
		Publisher: nodeagent.Publisher{Client: saClient, NodeName: "no-such-node"},
	}
	_, err := agent.Once(ctx)
	require.ErrorContains(t, err, `node "no-such-node" not found`)
	_, err = cp.Client.CoreV1().Nodes().Get(ctx, "no-such-node", metav1.GetOptions{})
	require.True(t, apierrors.IsNotFound(err), "the agent created a node")

	_, err = saClient.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
	require.True(t, apierrors.IsForbidden(err), "the agent's ServiceAccount can list pods: %v", err)
}

// The agent once (`gpuvc agent --once --simulate`) with its own credentials on
// the MIG node: the labels agree with the capacity the node pool declares.
func TestAgentRunOnce(t *testing.T) {
	cp := localcp.ForTest(t)
	ctx := poll.TestContext(t)
	kubeconfig, _ := agentIdentity(ctx, t, cp)
	resetNode(ctx, t, cp, "a100-mig-0")
	t.Cleanup(func() { resetNode(context.Background(), t, cp, "a100-mig-0") })
	var out, errOut bytes.Buffer
	start := time.Now()
	require.NoError(t, runAgent(ctx, kubeconfig, &errOut, nodeagent.Options{NodeName: "a100-mig-0", Once: true, Out: &out,
		Simulated: simulated(t, "product=NVIDIA-A100-SXM4-80GB,count=8,mig=all-balanced"),
		Strategy:  inventory.StrategyMixed, GFD: nodeagent.GFDAuto}), errOut.String())
	t.Logf("agent once: %v", time.Since(start).Round(time.Millisecond))
	require.Contains(t, out.String(), "node a100-mig-0: 8 GPUs")

	node, err := cp.Client.CoreV1().Nodes().Get(ctx, "a100-mig-0", metav1.GetOptions{})
	require.NoError(t, err)
	// The node pool declares 16x 1g.10gb, 8x 2g.20gb, 8x 3g.40gb on this node.
	for profile, n := range map[string]string{"1g.10gb": "16", "2g.20gb": "8", "3g.40gb": "8"} {
		require.Equal(t, n, node.Labels["nvidia.com/mig-"+profile+".count"], profile)
		q := node.Status.Capacity[corev1.ResourceName("nvidia.com/mig-"+profile)]
		require.Equal(t, n, q.String(), "capacity of %s", profile)
	}
	require.Equal(t, "mixed", node.Labels["nvidia.com/mig.strategy"])
	var inv inventory.Inventory
	require.NoError(t, json.Unmarshal([]byte(node.Annotations[contract.AnnotationGPUInventory]), &inv))
	require.True(t, inv.Simulated)
	require.Len(t, inv.GPUs[0].MIG.Instances, 4)
	require.True(t, strings.HasPrefix(inv.GPUs[0].UUID, "GPU-sim-"))
}

func keys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// On a node with a real kubelet (no kwok annotation: a kind trial worker, the
// local real node) the agent's simulated publication marks the GPUs simulated
// but does not make the node one where the share controller invents
// reservation UUIDs: there `gpuvc reserve` reports the device the kubelet
// assigned. On kwok nodes the control plane's kwok annotation does, and the
// agent leaves it alone.
func TestSimulatedPublicationLeavesUUIDsToReserve(t *testing.T) {
	cp := localcp.ForTest(t)
	ctx := poll.TestContext(t)
	_, saClient := agentIdentity(ctx, t, cp)
	const kubeletNode = "kubelet-node-0"
	_, err := cp.Client.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: kubeletNode}}, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = cp.Client.CoreV1().Nodes().Delete(context.Background(), kubeletNode, metav1.DeleteOptions{})
	})
	resetNode(ctx, t, cp, "a100-0")
	t.Cleanup(func() { resetNode(context.Background(), t, cp, "a100-0") })

	for name, kwok := range map[string]bool{kubeletNode: false, "a100-0": true} {
		agent := nodeagent.Agent{
			Source:    inventory.Spec{Product: "NVIDIA-A100-SXM4-80GB", Count: 2, Seed: name},
			Publisher: nodeagent.Publisher{Client: saClient, NodeName: name},
		}
		_, err := agent.Once(ctx)
		require.NoError(t, err)
		node, err := cp.Client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		require.NoError(t, err)
		require.Equal(t, "true", node.Labels[contract.LabelSimulated], name)
		require.Equal(t, kwok, share.RunsNoContainers(node.Labels, node.Annotations),
			"node %s (annotations %v): controller-invented UUIDs only on kwok nodes", name, node.Annotations)
		require.ElementsMatch(t, []string{contract.AnnotationGPUInventory}, ownedAnnotations(t, node, nodeagent.FieldManager), name)
	}
}

func ownedAnnotations(t *testing.T, node *corev1.Node, manager string) []string {
	t.Helper()
	ac, err := corev1ac.ExtractNode(node, manager)
	require.NoError(t, err)
	return keys(ac.Annotations)
}
