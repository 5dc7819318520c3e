package localnode_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"

	"github.com/gpuvc/gpuvc/api/contract"
	"github.com/gpuvc/gpuvc/e2e/testsupport/poll"
	"github.com/gpuvc/gpuvc/gpu/inventory"
	"github.com/gpuvc/gpuvc/gpu/nodeagent"
	"github.com/gpuvc/gpuvc/gpu/nodeagent/deviceplugin"
	"github.com/gpuvc/gpuvc/kind/localcluster"
	"github.com/gpuvc/gpuvc/kind/localnode"
)

// TestGPUQuarantineOnTheRealNode (issue 25): per-GPU quarantine with the real
// kubelet. `gpuvc agent` runs in-process with the simulated device plugin
// registered with the node's kubelet, the cordon-drain policy, a 5 s
// probation and 2 failures to a permanent quarantine. An XID on the GPU of a
// whole-GPU pod and an ECC error on the MIG GPU of a MIG pod (neither
// annotated: found through the kubelet's pod-resources socket) evict those two
// pods; the other whole-GPU pod keeps running, the node stays untainted and
// schedulable, the kubelet's allocatable drops by the failed devices and a new
// pod gets a healthy GPU. After the probation both GPUs are allocatable
// again, and a pod runs on the GPU that failed. Its second failure is
// permanent: the GPU stays out past the probation until an operator's clear
// annotation returns it.
func TestGPUQuarantineOnTheRealNode(t *testing.T) {
	cp := forTest(t)
	ctx := poll.Context(t, 6*time.Minute)
	// No GPUs of the node's own: the test's agent serves them.
	n := startNode(t, ctx, cp, localnode.Options{})
	spec := inventory.Spec{Product: "NVIDIA-A100-SXM4-80GB", Count: 4, Seed: n.Name,
		MIG: []string{"all-disabled", "all-disabled", "all-disabled", "2x1g.10gb"}}
	inv, err := inventory.Simulate(spec)
	require.NoError(t, err)
	const probation = 5 * time.Second
	failures := filepath.Join(t.TempDir(), "gpu-failures")
	agentCtx, stopAgent := context.WithCancel(ctx)
	ran := make(chan error, 1)
	go func() {
		ran <- nodeagent.Run(agentCtx, nodeagent.Options{
			NodeName: n.Name, Simulated: &spec, Strategy: inventory.StrategyMixed, GFD: nodeagent.GFDAuto, Interval: 2 * time.Second,
			DevicePlugin: true, DevicePluginDir: deviceplugin.DefaultDir,
			Health: nodeagent.HealthCordonDrain, InjectFailures: failures,
			Quarantine:         nodeagent.QuarantinePolicy{Probation: probation, MaxFailures: 2},
			PodResourcesSocket: filepath.Join(n.Dir, "kubelet", "pod-resources", "kubelet.sock"),
			RESTConfig:         func() (*rest.Config, error) { return rest.CopyConfig(cp.Config), nil },
		})
	}()
	t.Cleanup(func() {
		stopAgent()
		require.NoError(t, <-ran)
	})
	waitAllocatable(t, ctx, cp, n.Name, 3, 2)

	ns := namespace(t, ctx, cp, "team-quarantine")
	team := strings.TrimPrefix(ns, contract.TeamNamespacePrefix)
	visible := "echo visible=$NVIDIA_VISIBLE_DEVICES; exec sleep 3600"
	device := func(name string) string {
		t.Helper()
		var d string
		poll.Until(ctx, t, 30*time.Second, "the device of "+name+" in its log", func(ctx context.Context) (bool, error) {
			logs, err := podLogs(ctx, cp, ns, name)
			d = trimPrefixLine(logs, "visible=")
			return err == nil && d != "", nil
		})
		return d
	}
	runGPUPod := func(name string, mig bool) string {
		t.Helper()
		p := workloadPod(name, ns, visible)
		if mig {
			p = p.MIG("1g.10gb", "1")
		} else {
			p = p.GPUs("1")
		}
		runPod(t, ctx, cp, p.Obj())
		return device(name)
	}
	failed, kept := runGPUPod("whole-0", false), runGPUPod("whole-1", false)
	migDevice := runGPUPod("mig-0", true)
	var migGPU string
	for _, g := range inv.GPUs {
		for _, gi := range g.MIG.Instances {
			for _, d := range gi.Devices {
				if d.UUID == migDevice {
					migGPU = g.UUID
				}
			}
		}
	}
	require.NotEmpty(t, migGPU, "MIG device %s in the inventory", migDevice)
	inject := func(lines string) {
		t.Helper()
		f, err := os.OpenFile(failures, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
		require.NoError(t, err)
		_, err = f.WriteString(lines)
		require.NoError(t, err)
		require.NoError(t, f.Close())
	}

	// Failures: the two pods on the failed GPUs go; the other stays.
	injected := time.Now()
	inject(failed + " xid=79\n" + migGPU + " ecc\n")
	for _, name := range []string{"whole-0", "mig-0"} {
		waitGone(t, ctx, cp, ns, name)
		waitEvent(t, ctx, cp, ns, name, nodeagent.ReasonEvicted)
	}
	t.Logf("failures injected → both pods evicted: %v", time.Since(injected).Round(time.Millisecond))
	p, err := cp.Client.CoreV1().Pods(ns).Get(ctx, "whole-1", metav1.GetOptions{})
	require.NoError(t, err)
	require.True(t, p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodRunning, "the pod on healthy GPU %s: %+v", kept, p.Status)
	waitAllocatable(t, ctx, cp, n.Name, 2, 0)
	node, err := cp.Client.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{})
	require.NoError(t, err)
	require.False(t, tainted(node) || node.Spec.Unschedulable, "2 of 4 GPUs out: taints %v unschedulable %v", node.Spec.Taints, node.Spec.Unschedulable)
	require.ElementsMatch(t, []string{failed, migGPU}, strings.Split(node.Annotations[contract.AnnotationUnhealthyGPUs], ","))
	var lost map[string]float64
	require.NoError(t, json.Unmarshal([]byte(node.Annotations[contract.AnnotationGPUSecondsLost]), &lost))
	require.Greater(t, lost[team], 0.0, "GPU-seconds lost of team %s: %v", team, lost)
	require.NotEqual(t, failed, runGPUPod("whole-2", false), "a new pod got the failed GPU")

	// Probation over: both GPUs allocatable again; a pod gets the one that
	// failed (the only whole GPU free).
	waitAllocatable(t, ctx, cp, n.Name, 3, 2)
	t.Logf("failures injected → GPUs allocatable again: %v (probation %v)", time.Since(injected).Round(time.Millisecond), probation)
	node, err = cp.Client.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{})
	require.NoError(t, err)
	cond := condition(node)
	require.True(t, cond != nil && cond.Status == corev1.ConditionTrue && strings.Contains(cond.Message, "returned 1 times"), "condition %+v", cond)
	require.Equal(t, failed, runGPUPod("whole-3", false), "the returned GPU is allocated again")

	// Second failure: permanent. The pod on it goes; the GPU stays out past
	// twice the probation.
	inject(failed + " xid=79\n")
	waitGone(t, ctx, cp, ns, "whole-3")
	waitAllocatable(t, ctx, cp, n.Name, 2, 2)
	for deadline := time.Now().Add(2 * probation); time.Now().Before(deadline); {
		node, err = cp.Client.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{})
		require.NoError(t, err)
		q := node.Status.Allocatable[contract.ResourceGPU]
		require.Equal(t, int64(2), q.Value(), "a permanently quarantined GPU came back by itself")
		time.Sleep(poll.Interval) // watching that nothing happens: no condition to poll for
	}
	var records map[string]nodeagent.GPURecord
	require.NoError(t, json.Unmarshal([]byte(node.Annotations[contract.AnnotationGPUQuarantine]), &records))
	require.Equal(t, nodeagent.StatePermanent, records[failed].State, "records %+v", records)
	require.Equal(t, 2, records[failed].Failures)

	// The operator clears it.
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, contract.AnnotationGPUQuarantineClear, failed)
	_, err = cp.Client.CoreV1().Nodes().Patch(ctx, n.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	require.NoError(t, err)
	waitAllocatable(t, ctx, cp, n.Name, 3, 2)
	node, err = cp.Client.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{})
	require.NoError(t, err)
	require.NotContains(t, node.Annotations, contract.AnnotationGPUQuarantineClear)
}

// waitAllocatable waits until the kubelet reports gpus nvidia.com/gpu and migs
// nvidia.com/mig-1g.10gb allocatable.
func waitAllocatable(t *testing.T, ctx context.Context, cp *localcluster.ControlPlane, node string, gpus, migs int64) {
	t.Helper()
	poll.UntilSeen(ctx, t, time.Minute, fmt.Sprintf("allocatable %d GPUs, %d MIG 1g.10gb on %s", gpus, migs, node), func(ctx context.Context) (bool, string, error) {
		n, err := cp.Client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		g, m := n.Status.Allocatable[contract.ResourceGPU], n.Status.Allocatable["nvidia.com/mig-1g.10gb"]
		return g.Value() == gpus && m.Value() == migs, fmt.Sprintf("allocatable %v", n.Status.Allocatable), nil
	})
}

// waitGone waits until the pod is deleted (an eviction of a bare pod).
func waitGone(t *testing.T, ctx context.Context, cp *localcluster.ControlPlane, ns, name string) {
	t.Helper()
	poll.UntilSeen(ctx, t, time.Minute, "pod "+name+" evicted", func(ctx context.Context) (bool, string, error) {
		p, err := cp.Client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, "", nil
		}
		if err != nil {
			return false, "", err
		}
		return p.DeletionTimestamp != nil, poll.DescribePod(p), nil
	})
}

// waitEvent waits for the agent's events.k8s.io event with reason on a pod.
func waitEvent(t *testing.T, ctx context.Context, cp *localcluster.ControlPlane, ns, name, reason string) {
	t.Helper()
	poll.UntilSeen(ctx, t, 30*time.Second, "event "+reason+" on pod "+name, func(ctx context.Context) (bool, string, error) {
		l, err := cp.Client.EventsV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: fields.AndSelectors(
			fields.OneTermEqualSelector("regarding.name", name), fields.OneTermEqualSelector("reason", reason)).String()})
		if err != nil {
			return false, "", err
		}
		return len(l.Items) > 0, fmt.Sprint(len(l.Items)), nil
	})
}

func tainted(n *corev1.Node) bool {
	return slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == contract.TaintGPUUnhealthy })
}

func condition(n *corev1.Node) *corev1.NodeCondition {
	for i := range n.Status.Conditions {
		if n.Status.Conditions[i].Type == contract.ConditionGPUHealthy {
			return &n.Status.Conditions[i]
		}
	}
	return nil
}
