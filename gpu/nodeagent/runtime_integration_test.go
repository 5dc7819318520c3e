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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"

	"github.com/gpuvc/gpuvc/api/contract"
	"github.com/gpuvc/gpuvc/e2e/localcp"
	"github.com/gpuvc/gpuvc/e2e/testsupport/poll"
	"github.com/gpuvc/gpuvc/gpu/inventory"
	"github.com/gpuvc/gpuvc/gpu/nodeagent"
	"github.com/gpuvc/gpuvc/gpu/runtimeconfig"
	"github.com/gpuvc/gpuvc/kind/localcluster"
)

// runtimeIdentity is a ServiceAccount with exactly nodeagent.RBACRules("", policy):
// the runtime check alone, no GPU health.
func runtimeIdentity(ctx context.Context, t *testing.T, cp *localcluster.ControlPlane, policy nodeagent.RuntimePolicy) (string, kubernetes.Interface) {
	t.Helper()
	return boundIdentity(ctx, t, cp, "gpuvc-agent-runtime-"+string(policy), nodeagent.RBACRules("", policy))
}

func runtimeSafe(n *corev1.Node) *corev1.NodeCondition {
	for i := range n.Status.Conditions {
		if n.Status.Conditions[i].Type == contract.ConditionGPURuntimeSafe {
			return &n.Status.Conditions[i]
		}
	}
	return nil
}

func runtimeTainted(n *corev1.Node) bool {
	return slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool {
		return t.Key == contract.TaintGPURuntimeUnsafe && t.Effect == corev1.TaintEffectNoSchedule
	})
}

// restoreRuntime takes the runtime check's taint and condition off a kwok node.
func restoreRuntime(t *testing.T, cp *localcluster.ControlPlane, name string) {
	ctx := context.Background()
	n, err := cp.Client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Error(err)
		return
	}
	taints := slices.DeleteFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == contract.TaintGPURuntimeUnsafe })
	patch, _ := json.Marshal(map[string]any{"spec": map[string]any{"taints": taints}})
	if _, err := cp.Client.CoreV1().Nodes().Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Error(err)
	}
	status, _ := json.Marshal(map[string]any{"status": map[string]any{"conditions": []map[string]any{{"type": contract.ConditionGPURuntimeSafe, "$patch": "delete"}}}})
	if _, err := cp.Client.CoreV1().Nodes().Patch(ctx, name, types.StrategicMergePatchType, status, metav1.PatchOptions{}, "status"); err != nil {
		t.Error(err)
	}
}

const unsafeToolkitConfig = `accept-nvidia-visible-devices-envvar-when-unprivileged = true
accept-nvidia-visible-devices-as-volume-mounts = false

[nvidia-container-runtime]
mode = "legacy"
`

// The node's agent, with its own RBAC, judges a toolkit config.toml that
// honours NVIDIA_VISIBLE_DEVICES from unprivileged containers: condition
// GPURuntimeSafe=False naming the file and key, the NoSchedule taint beside the
// pool's, a GPURuntimeUnsafe event on the Node, the metrics. The file is then
// fixed: the next check lifts all of it (condition True, taint gone, metrics 0,
// a GPURuntimeSafe event). In warn-only mode the same unsafe file leaves no
// taint.
func TestRuntimeCheckFencesAnUnsafeNode(t *testing.T) {
	cp := localcp.ForTest(t)
	ctx := poll.TestContext(t)
	const nodeName = "h100-0"
	_, client := runtimeIdentity(ctx, t, cp, nodeagent.RuntimeFence)
	t.Cleanup(func() { restoreRuntime(t, cp, nodeName) })
	conf := filepath.Join(t.TempDir(), "config.toml")
	require.NoError(t, os.WriteFile(conf, []byte(unsafeToolkitConfig), 0o644))
	judge := func() runtimeconfig.Verdict {
		return runtimeconfig.Judge(runtimeconfig.Input{Files: runtimeconfig.Read("", []string{conf})})
	}

	broadcaster := events.NewBroadcaster(&events.EventSinkImpl{Interface: client.EventsV1()})
	require.NoError(t, broadcaster.StartRecordingToSinkWithContext(ctx))
	t.Cleanup(broadcaster.Shutdown)
	reg := prometheus.NewRegistry()
	metrics, err := nodeagent.NewRuntimeMetrics(reg)
	require.NoError(t, err)
	check := &nodeagent.RuntimeCheck{Client: client, NodeName: nodeName, Policy: nodeagent.RuntimeFence, Judge: judge,
		Recorder: broadcaster.NewRecorder(scheme.Scheme, "gpuvc-agent"), Metrics: metrics, Resync: 50 * time.Millisecond}
	runCtx, stop := context.WithCancel(ctx)
	ran := make(chan error, 1)
	go func() { ran <- check.Run(runCtx) }()

	var node *corev1.Node
	poll.UntilSeen(ctx, t, 30*time.Second, "node "+nodeName+" fenced", func(ctx context.Context) (bool, string, error) {
		n, err := cp.Client.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		node = n
		c := runtimeSafe(n)
		return c != nil && c.Status == corev1.ConditionFalse && runtimeTainted(n), fmt.Sprintf("condition %v, taints %v", c, n.Spec.Taints), nil
	})
	c := runtimeSafe(node)
	require.Equal(t, runtimeconfig.ReasonEnvvarAccepted, c.Reason)
	for _, want := range []string{conf, runtimeconfig.KeyAcceptEnvvar + " = true", `"legacy"`, "ACCEPT_NVIDIA_VISIBLE_DEVICES_ENVVAR_WHEN_UNPRIVILEGED=false", "Fenced: tainted " + contract.TaintGPURuntimeUnsafe} {
		require.Contains(t, c.Message, want)
	}
	require.True(t, slices.ContainsFunc(node.Spec.Taints, func(t corev1.Taint) bool { return t.Key == contract.LabelPool }), "pool taint lost: %v", node.Spec.Taints)
	note := waitEvent(ctx, t, cp.Client, "Node", nodeName, nodeagent.ReasonRuntimeUnsafe)
	require.Contains(t, note, conf)
	require.Equal(t, 1.0, testutil.ToFloat64(metrics.Unsafe.WithLabelValues(nodeName, runtimeconfig.ReasonEnvvarAccepted)))
	require.Equal(t, 1.0, testutil.ToFloat64(metrics.Fenced.WithLabelValues(nodeName)))

	// A second enforcement of the same verdict writes nothing.
	before, err := cp.Client.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
	require.NoError(t, err)
	_, err = check.Enforce(ctx)
	require.NoError(t, err)
	after, err := cp.Client.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
	require.NoError(t, err)
	require.Equal(t, runtimeSafe(before).LastHeartbeatTime, runtimeSafe(after).LastHeartbeatTime, "an unchanged verdict rewrote the condition")

	// The platform fixes the file: the fence goes at the next check.
	require.NoError(t, os.WriteFile(conf, []byte(runtimeconfig.Simulated), 0o644))
	poll.UntilSeen(ctx, t, 30*time.Second, "node "+nodeName+" unfenced", func(ctx context.Context) (bool, string, error) {
		n, err := cp.Client.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		c := runtimeSafe(n)
		return c != nil && c.Status == corev1.ConditionTrue && !runtimeTainted(n), fmt.Sprintf("condition %v, taints %v", c, n.Spec.Taints), nil
	})
	require.Contains(t, waitEvent(ctx, t, cp.Client, "Node", nodeName, nodeagent.ReasonRuntimeSafe), runtimeconfig.KeyAcceptEnvvar+" = false")
	stop()
	require.NoError(t, <-ran)
	require.Equal(t, 0.0, testutil.ToFloat64(metrics.Unsafe.WithLabelValues(nodeName, runtimeconfig.ReasonEnvvarIgnored)))
	require.Equal(t, 0.0, testutil.ToFloat64(metrics.Fenced.WithLabelValues(nodeName)))
	require.Equal(t, 1, testutil.CollectAndCount(metrics.Unsafe), "the unsafe reason's series should be gone")

	// Warn only: the unsafe file again, no taint.
	require.NoError(t, os.WriteFile(conf, []byte(unsafeToolkitConfig), 0o644))
	warn := &nodeagent.RuntimeCheck{Client: client, NodeName: nodeName, Policy: nodeagent.RuntimeWarn, Judge: judge}
	v, err := warn.Enforce(ctx)
	require.NoError(t, err)
	require.False(t, v.Safe)
	node, err = cp.Client.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
	require.NoError(t, err)
	require.Equal(t, corev1.ConditionFalse, runtimeSafe(node).Status)
	require.Contains(t, runtimeSafe(node).Message, "Warn only")
	require.False(t, runtimeTainted(node), "warn-only tainted: %v", node.Spec.Taints)

	// A fencing run after the warning taints; switching back to warn lifts
	// the taint an earlier fencing run left.
	_, err = check.Enforce(ctx)
	require.NoError(t, err)
	node, err = cp.Client.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
	require.NoError(t, err)
	require.True(t, runtimeTainted(node))
	_, err = warn.Enforce(ctx)
	require.NoError(t, err)
	node, err = cp.Client.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
	require.NoError(t, err)
	require.False(t, runtimeTainted(node))
}

// The agent as `gpuvc agent --simulate …` runs it, in-process with the runtime
// check's RBAC: by default the simulated node has the hardened toolkit
// configuration and passes; given an unsafe --nvidia-toolkit-config with
// --gpu-runtime=warn, the condition turns False, /metrics says so, and no
// taint is set.
func TestAgentRunRuntimeCheck(t *testing.T) {
	cp := localcp.ForTest(t)
	ctx := poll.TestContext(t)
	const nodeName = "h100-0"
	kubeconfig, _ := runtimeIdentity(ctx, t, cp, nodeagent.RuntimeWarn)
	t.Cleanup(func() { restoreRuntime(t, cp, nodeName) })
	t.Cleanup(func() { resetNode(context.Background(), t, cp, nodeName) })
	conf := filepath.Join(t.TempDir(), "config.toml")
	require.NoError(t, os.WriteFile(conf, []byte(unsafeToolkitConfig), 0o644))

	// --gpu-runtime=warn, --gpu-failure=off, and what set changes.
	agent := func(ctx context.Context, set func(*nodeagent.Options)) (chan error, *bytes.Buffer) {
		var out bytes.Buffer
		o := nodeagent.Options{NodeName: nodeName, Simulated: simulated(t, "product=NVIDIA-H100-80GB-HBM3,count=8"), Interval: time.Hour,
			Strategy: inventory.StrategyMixed, GFD: nodeagent.GFDAuto, Out: &out, Runtime: nodeagent.RuntimeWarn, SimulatedToolkit: true}
		set(&o)
		ran := make(chan error, 1)
		go func() { ran <- runAgent(ctx, kubeconfig, &out, o) }()
		return ran, &out
	}
	condition := func(want corev1.ConditionStatus, log *bytes.Buffer) *corev1.Node {
		var node *corev1.Node
		poll.UntilSeen(ctx, t, 30*time.Second, "GPURuntimeSafe="+string(want), func(ctx context.Context) (bool, string, error) {
			n, err := cp.Client.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
			if err != nil {
				return false, "", err
			}
			node = n
			c := runtimeSafe(n)
			return c != nil && c.Status == want, fmt.Sprintf("condition %v; agent log: %s", c, log), nil
		})
		return node
	}

	runCtx, stop := context.WithCancel(ctx)
	ran, log := agent(runCtx, func(*nodeagent.Options) {})
	node := condition(corev1.ConditionTrue, log)
	require.Contains(t, runtimeSafe(node).Message, runtimeconfig.SimulatedPath)
	stop()
	require.NoError(t, <-ran, log.String())

	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	runCtx, stop = context.WithCancel(ctx)
	defer stop()
	ran, log = agent(runCtx, func(o *nodeagent.Options) {
		o.SimulatedToolkit, o.ToolkitConfig, o.MetricsAddr = false, []string{conf}, addr // --nvidia-toolkit-config, --metrics-bind-address
	})
	node = condition(corev1.ConditionFalse, log)
	require.Equal(t, runtimeconfig.ReasonEnvvarAccepted, runtimeSafe(node).Reason)
	require.Contains(t, runtimeSafe(node).Message, conf)
	require.False(t, runtimeTainted(node), "warn-only tainted: %v", node.Spec.Taints)
	var body string
	poll.UntilSeen(ctx, t, 10*time.Second, "runtime metrics", func(ctx context.Context) (bool, string, error) {
		resp, err := http.Get("http://" + addr + "/metrics")
		if err != nil {
			return false, err.Error(), nil
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		body = string(b)
		return err == nil && strings.Contains(body, "gpuvc_agent_gpu_runtime_unsafe"), body, err
	})
	require.Contains(t, body, `gpuvc_agent_gpu_runtime_unsafe{node="h100-0",reason="EnvvarAcceptedWhenUnprivileged"} 1`)
	require.Contains(t, body, `gpuvc_agent_gpu_runtime_fenced{node="h100-0"} 0`)
	stop()
	require.NoError(t, <-ran, log.String())
}
