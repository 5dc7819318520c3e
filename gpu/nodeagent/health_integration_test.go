package nodeagent_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"

	"github.com/gpuvc/gpuvc/api/contract"
	"github.com/gpuvc/gpuvc/e2e/localcp"
	"github.com/gpuvc/gpuvc/e2e/testsupport/poll"
	"github.com/gpuvc/gpuvc/gpu/health"
	"github.com/gpuvc/gpuvc/gpu/inventory"
	"github.com/gpuvc/gpuvc/gpu/nodeagent"
	"github.com/gpuvc/gpuvc/kind/localcluster"
)

// healthIdentity is a ServiceAccount with exactly nodeagent.RBACRules(policy, "").
func healthIdentity(ctx context.Context, t *testing.T, cp *localcluster.ControlPlane, policy nodeagent.HealthPolicy) (string, kubernetes.Interface) {
	t.Helper()
	return boundIdentity(ctx, t, cp, "gpuvc-agent-"+string(policy), nodeagent.RBACRules(policy, ""))
}

// An XID injected into a simulated GPU of kwok node h100-0, with the agent's
// own RBAC, the cordon-drain policy and --gpu-failure-node-taint=any: the node
// gets GPUHealthy=False naming the GPU and the XID, the annotation, the taint
// and the cordon; the pod recorded on that GPU is evicted, the one on another
// GPU stays; events on the node and the pod, metrics. A restarted agent keeps
// the GPU out (no probation); an operator's clear annotation returns it: the
// agent removes its taint, its cordon, the annotations and sets the condition
// True.
func TestHealthInjectedXIDOnTheRealAPIServer(t *testing.T) {
	cp := localcp.ForTest(t)
	ctx := poll.TestContext(t)
	const nodeName = "h100-0"
	_, client := healthIdentity(ctx, t, cp, nodeagent.HealthCordonDrain)
	inv, err := inventory.Simulate(inventory.Spec{Product: "NVIDIA-H100-80GB-HBM3", Count: 8, Seed: nodeName})
	require.NoError(t, err)
	bad, good := inv.GPUs[3].UUID, inv.GPUs[4].UUID
	t.Cleanup(func() { restoreNode(t, cp, nodeName) })

	ns := "health-drain"
	_, err = cp.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) {
		require.NoError(t, err)
	}
	require.NoError(t, cp.WaitForServiceAccount(ctx, ns, "default"))
	for name, uuid := range map[string]string{"on-bad": bad, "on-good": good} {
		_, err := cp.Client.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{contract.AnnotationGPUUUID: uuid}},
			Spec: corev1.PodSpec{NodeName: nodeName, Containers: []corev1.Container{{Name: "c", Image: "registry.invalid/x"}},
				TerminationGracePeriodSeconds: new(int64)},
		}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	t.Cleanup(func() {
		_ = cp.Client.CoreV1().Pods(ns).DeleteCollection(context.Background(), metav1.DeleteOptions{GracePeriodSeconds: new(int64)}, metav1.ListOptions{})
	})

	broadcaster := events.NewBroadcaster(&events.EventSinkImpl{Interface: client.EventsV1()})
	require.NoError(t, broadcaster.StartRecordingToSinkWithContext(ctx))
	t.Cleanup(broadcaster.Shutdown)
	reg := prometheus.NewRegistry()
	var ids []string
	for _, g := range inv.GPUs {
		ids = append(ids, g.UUID)
	}
	metrics, err := nodeagent.NewHealthMetrics(reg, ids)
	require.NoError(t, err)
	inject := filepath.Join(t.TempDir(), "inject")
	h := &nodeagent.Health{Client: client, NodeName: nodeName, Policy: nodeagent.HealthCordonDrain, GPUs: len(inv.GPUs),
		NodeTaint: nodeagent.NodeTaintAnyOut, Recorder: broadcaster.NewRecorder(scheme.Scheme, "gpuvc-agent"), Metrics: metrics}
	runCtx, stop := context.WithCancel(ctx)
	ran := make(chan error, 1)
	go func() {
		ran <- h.Run(runCtx, health.Injected{Path: inject, Inventory: inv, Poll: 20 * time.Millisecond})
	}()

	// Healthy at start.
	poll.UntilSeen(ctx, t, 30*time.Second, "GPUHealthy=True on "+nodeName, func(ctx context.Context) (bool, string, error) {
		n, err := cp.Client.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		c := gpuHealthy(n)
		return c != nil && c.Status == corev1.ConditionTrue, fmt.Sprint(c), nil
	})

	injected := time.Now()
	require.NoError(t, os.WriteFile(inject, []byte("3 xid=79\n"), 0o644))
	var node *corev1.Node
	poll.UntilSeen(ctx, t, 30*time.Second, "GPU 3 marked unhealthy on "+nodeName, func(ctx context.Context) (bool, string, error) {
		n, err := cp.Client.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		node = n
		c := gpuHealthy(n)
		tainted := slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == contract.TaintGPUUnhealthy })
		return c != nil && c.Status == corev1.ConditionFalse && tainted && n.Spec.Unschedulable,
			fmt.Sprintf("condition %v, taints %v, unschedulable %v", c, n.Spec.Taints, n.Spec.Unschedulable), nil
	})
	t.Logf("XID injected → node tainted and cordoned: %v", time.Since(injected).Round(time.Millisecond))
	c := gpuHealthy(node)
	require.Equal(t, "XID", c.Reason)
	require.Equal(t, "1 of 8 GPUs out of service: GPU 3 ("+bad+"): XID 79 (GPU has fallen off the bus); failure 1, out until an operator clears it (no probation), returned 0 times", c.Message)
	require.Equal(t, bad, node.Annotations[contract.AnnotationUnhealthyGPUs])
	// The pool taint stays beside the agent's.
	require.True(t, slices.ContainsFunc(node.Spec.Taints, func(t corev1.Taint) bool { return t.Key == contract.LabelPool }), "pool taint lost: %v", node.Spec.Taints)

	poll.UntilSeen(ctx, t, 30*time.Second, "pod on-bad evicted", func(ctx context.Context) (bool, string, error) {
		p, err := cp.Client.CoreV1().Pods(ns).Get(ctx, "on-bad", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, "", nil
		}
		if err != nil {
			return false, "", err
		}
		return p.DeletionTimestamp != nil, poll.DescribePod(p), nil
	})
	p, err := cp.Client.CoreV1().Pods(ns).Get(ctx, "on-good", metav1.GetOptions{})
	require.NoError(t, err)
	require.Nil(t, p.DeletionTimestamp, "the pod on a healthy GPU was evicted")

	for _, want := range []struct{ kind, name, reason string }{
		{"Node", nodeName, nodeagent.ReasonGPUUnhealthy},
		{"Node", nodeName, nodeagent.ReasonNodeTainted},
		{"Node", nodeName, nodeagent.ReasonNodeCordoned},
		{"Pod", "on-bad", nodeagent.ReasonEvicted},
	} {
		note := waitEvent(ctx, t, cp.Client, want.kind, want.name, want.reason)
		require.Contains(t, note, bad, "event %s on %s", want.reason, want.name)
	}
	require.Equal(t, 0.0, testutil.ToFloat64(metrics.Healthy.WithLabelValues(nodeName, "3", bad)))
	require.Equal(t, 1.0, testutil.ToFloat64(metrics.Healthy.WithLabelValues(nodeName, "4", good)))
	require.Equal(t, 1.0, testutil.ToFloat64(metrics.Failures.WithLabelValues(nodeName, "3", bad, "XID", "79")))
	require.Equal(t, 1.0, testutil.ToFloat64(metrics.Actions.WithLabelValues(nodeName, "eviction")))
	stop()
	require.NoError(t, <-ran)

	// The agent restarted: the GPU stays out (the node's record). An operator
	// reset the GPU and clears it: the agent takes back what it set.
	restarted := &nodeagent.Health{Client: client, NodeName: nodeName, Policy: nodeagent.HealthCordonDrain, GPUs: len(inv.GPUs), NodeTaint: nodeagent.NodeTaintAnyOut}
	require.NoError(t, restarted.Enforce(ctx))
	node, err = cp.Client.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
	require.NoError(t, err)
	require.Equal(t, corev1.ConditionFalse, gpuHealthy(node).Status, "a restarted agent forgot the GPU out")
	_, err = cp.Client.CoreV1().Nodes().Patch(ctx, nodeName, types.MergePatchType,
		[]byte(`{"metadata":{"annotations":{"`+contract.AnnotationGPUQuarantineClear+`":"`+bad+`"}}}`), metav1.PatchOptions{})
	require.NoError(t, err)
	require.NoError(t, restarted.Enforce(ctx))
	node, err = cp.Client.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
	require.NoError(t, err)
	require.Equal(t, corev1.ConditionTrue, gpuHealthy(node).Status)
	require.NotContains(t, node.Annotations, contract.AnnotationUnhealthyGPUs)
	require.NotContains(t, node.Annotations, contract.AnnotationGPUQuarantineClear)
	require.NotContains(t, node.Annotations, contract.AnnotationGPUHealthCordoned)
	require.False(t, slices.ContainsFunc(node.Spec.Taints, func(t corev1.Taint) bool { return t.Key == contract.TaintGPUUnhealthy }))
	require.False(t, node.Spec.Unschedulable, "the agent's own cordon stayed")
}

func gpuHealthy(n *corev1.Node) *corev1.NodeCondition {
	for i := range n.Status.Conditions {
		if n.Status.Conditions[i].Type == contract.ConditionGPUHealthy {
			return &n.Status.Conditions[i]
		}
	}
	return nil
}

// waitEvent waits for an events.k8s.io event with reason regarding kind/name
// and returns its note.
func waitEvent(ctx context.Context, t *testing.T, c kubernetes.Interface, kind, name, reason string) string {
	t.Helper()
	var note string
	poll.UntilSeen(ctx, t, 30*time.Second, fmt.Sprintf("event %s on %s %s", reason, kind, name), func(ctx context.Context) (bool, string, error) {
		l, err := c.EventsV1().Events("").List(ctx, metav1.ListOptions{FieldSelector: fields.AndSelectors(
			fields.OneTermEqualSelector("regarding.kind", kind), fields.OneTermEqualSelector("regarding.name", name),
			fields.OneTermEqualSelector("reason", reason)).String()})
		if err != nil || len(l.Items) == 0 {
			return false, fmt.Sprint(err), nil
		}
		note = l.Items[0].Note
		return true, "", nil
	})
	return note
}

// restoreNode takes back what the health test changed on a kwok node: the
// taint, the cordon, the condition and the annotation.
func restoreNode(t *testing.T, cp *localcluster.ControlPlane, name string) {
	ctx := context.Background()
	n, err := cp.Client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Error(err)
		return
	}
	taints := slices.DeleteFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == contract.TaintGPUUnhealthy })
	patch, _ := json.Marshal(map[string]any{
		"metadata": map[string]any{"annotations": map[string]any{contract.AnnotationUnhealthyGPUs: nil, contract.AnnotationGPUQuarantine: nil,
			contract.AnnotationGPUQuarantineClear: nil, contract.AnnotationGPUHealthCordoned: nil, contract.AnnotationGPUSecondsLost: nil}},
		"spec": map[string]any{"taints": taints, "unschedulable": false},
	})
	if _, err := cp.Client.CoreV1().Nodes().Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Error(err)
	}
	status, _ := json.Marshal(map[string]any{"status": map[string]any{"conditions": []map[string]any{{"type": contract.ConditionGPUHealthy, "$patch": "delete"}}}})
	if _, err := cp.Client.CoreV1().Nodes().Patch(ctx, name, types.StrategicMergePatchType, status, metav1.PatchOptions{}, "status"); err != nil && !strings.Contains(err.Error(), "not found") {
		t.Error(err)
	}
}

// The agent as `gpuvc agent --simulate … --inject-gpu-failures <file>` runs it,
// in-process with the taint policy's RBAC: an ECC error injected into GPU 2
// sets the condition and takes the GPU out alone (one of 8: no taint, the
// default --gpu-failure-node-taint=all); the metrics endpoint shows it.
func TestAgentRunInjectedFailure(t *testing.T) {
	cp := localcp.ForTest(t)
	ctx := poll.TestContext(t)
	const nodeName = "h100-0"
	kubeconfig, _ := healthIdentity(ctx, t, cp, nodeagent.HealthTaint)
	t.Cleanup(func() { restoreNode(t, cp, nodeName) })
	t.Cleanup(func() { resetNode(context.Background(), t, cp, nodeName) })
	inject := filepath.Join(t.TempDir(), "inject")
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())

	runCtx, stop := context.WithCancel(ctx)
	var out, errOut bytes.Buffer
	// The command's defaults besides: --gpu-runtime=fence on the simulated
	// node's hardened toolkit configuration.
	o := nodeagent.Options{NodeName: nodeName, Simulated: simulated(t, "product=NVIDIA-H100-80GB-HBM3,count=8"), Interval: time.Hour,
		Strategy: inventory.StrategyMixed, GFD: nodeagent.GFDAuto, Out: &out,
		Health: nodeagent.HealthTaint, InjectFailures: inject, MetricsAddr: addr,
		Runtime: nodeagent.RuntimeFence, SimulatedToolkit: true}
	ran := make(chan error, 1)
	go func() { ran <- runAgent(runCtx, kubeconfig, &errOut, o) }()

	require.NoError(t, os.WriteFile(inject, []byte("2 ecc\n"), 0o644))
	poll.UntilSeen(ctx, t, 30*time.Second, "GPU 2 out of service", func(ctx context.Context) (bool, string, error) {
		n, err := cp.Client.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		c := gpuHealthy(n)
		return c != nil && c.Reason == "DoubleBitECC" && strings.Contains(c.Message, "GPU 2 (") && n.Annotations[contract.AnnotationUnhealthyGPUs] != "",
			fmt.Sprintf("condition %v annotations %v; agent log: %s", c, n.Annotations, errOut.String()), nil
	})
	n, err := cp.Client.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
	require.NoError(t, err)
	require.False(t, n.Spec.Unschedulable, "the taint policy cordoned")
	require.False(t, slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == contract.TaintGPUUnhealthy }),
		"one GPU of 8 out tainted the node: %v", n.Spec.Taints)
	var body string
	poll.UntilSeen(ctx, t, 10*time.Second, "metrics", func(ctx context.Context) (bool, string, error) {
		resp, err := http.Get("http://" + addr + "/metrics")
		if err != nil {
			return false, err.Error(), nil
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		body = string(b)
		return err == nil && strings.Contains(body, "gpuvc_agent_gpu_failures_total"), body, err
	})
	require.Regexp(t, `gpuvc_agent_gpu_healthy\{gpu="2",node="h100-0",uuid="GPU-sim-[^"]+"\} 0`, body)
	require.Contains(t, body, `kind="DoubleBitECC"`)
	stop()
	require.NoError(t, <-ran, errOut.String())
}
