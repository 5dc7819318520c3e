package suite

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/gpuvc/gpuvc/e2e/testsupport/poll"
	"github.com/gpuvc/gpuvc/gpu/nodeagent"
	"github.com/gpuvc/gpuvc/kind/localnode"
)

// realNode is the local stack's real node, for what only it offers a test: its
// kubelet's pod-resources socket and its simulated GPUs' utilization file.
func realNode(t *testing.T) *localnode.Node {
	t.Helper()
	b, ok := backend.(*realBackend)
	if !ok || b.stack.Node == nil {
		t.Skipf("needs the local real node (its kubelet's pod-resources socket, its GPU utilization file); the %s has none", backend.Name())
	}
	return b.stack.Node
}

// kubeletDevices are the NVIDIA devices the real node's kubelet gave each pod's
// containers, "namespace/pod" → device IDs, from its pod-resources socket: the
// kubelet's own record, not what anyone told the pod.
func kubeletDevices(ctx context.Context, t *testing.T, node *localnode.Node) map[string][]string {
	t.Helper()
	c, closeConn, err := nodeagent.DialPodResources(node.PodResourcesSocket())
	require.NoError(t, err)
	defer closeConn()
	owners, err := nodeagent.DeviceOwners(ctx, c)
	require.NoError(t, err)
	out := map[string][]string{}
	for id, o := range owners {
		out[o.Namespace+"/"+o.Pod] = append(out[o.Namespace+"/"+o.Pod], id)
	}
	for k := range out {
		slices.Sort(out[k])
	}
	return out
}

// TestIdleGPUPodsOnTheRealNode (issue 25, idle measured by GPU use): a team whose
// spec.idle.gpuPods evicts pods below 10 % for 5 minutes runs two one-GPU pods on
// the real node through its own kubeconfig. The test sets the utilization of the
// GPUs the kubelet gave them (its pod-resources socket says which) in the node's
// simulated-GPU utilization file: 0 % for one, 85 % for the other. The node's
// agent exports it with the owners the real kubelet names, the manager pod scrapes
// it, and after the window — not before — only the idle pod gets the Warning
// GPUIdle, which the team sees on its own pod, and is evicted; the busy pod keeps
// running without an event. In the same window a second team, whose policy is
// action Sleep, runs one GPU pod (0 %) and one pod without GPUs: it reads GPUIdle
// on its GPU pod through its kubeconfig before its control plane is scaled to
// zero, the Team is Asleep with the policy's reason, both host pods are evicted
// and the kubelet frees the GPU; woken with `gpuvc team wake`, its (ephemeral)
// cluster has no pods left and tells it why it slept (sleepyTeam).
func TestIdleGPUPodsOnTheRealNode(t *testing.T) {
	ctx := e2eWithin(t, 15*time.Minute)
	needsRunningContainers(t)
	node := realNode(t)
	const team, after = "idler", 5 * time.Minute
	ns := "team-" + team
	createTeam(ctx, t, team, "--pool", realPool, "--gpus", "2")
	// As a platform engineer: the policy on the Team (no CLI flag sets it).
	kubectl(ctx, t, backend.Kubeconfig(), "patch", "team", team, "--type=merge", "-p",
		`{"spec":{"idle":{"gpuPods":{"after":"5m","action":"Evict","maxUtilizationPercent":10}}}}`)
	vc := teamClient(t, teamKubeconfig(t, team))
	// The second team, in the same window: action Sleep, one GPU pod, one without.
	sleepy := startSleepyTeam(ctx, t, node)

	const script = "echo NVIDIA_VISIBLE_DEVICES=$NVIDIA_VISIBLE_DEVICES; sleep 3600"
	for _, name := range []string{"idle", "busy"} {
		_, err := submitVirtualPod(ctx, t, team, workload(name, script).GPUs("1").Obj())
		require.NoError(t, err)
	}
	gpu := map[string]string{}
	for _, name := range []string{"idle", "busy"} {
		waitVirtualPod(ctx, t, vc, name, running)
		got := kubeletDevices(ctx, t, node)[ns+"/"+hostPodFor(name, "default", team)]
		require.Len(t, got, 1, "the kubelet's devices of %s", name)
		gpu[name] = got[0]
		require.Contains(t, logs(ctx, t, vc, name), "NVIDIA_VISIBLE_DEVICES="+gpu[name], "the device %s's container saw", name)
	}
	require.NoError(t, localnode.SetGPUUtilization(node.Dir, map[string]int{gpu["idle"]: 0, gpu["busy"]: 85, sleepy.gpu: 0}))
	began := time.Now()

	// What the manager reads: the node agent's metrics, owners from the kubelet.
	eventually(ctx, t, "the node agent exports both pods' GPU utilization", func(ctx context.Context) (bool, string) {
		text, err := agentMetrics(ctx)
		if err != nil {
			return false, err.Error()
		}
		for name, want := range map[string]string{"idle": "0", "busy": "85"} {
			if !hasUtilization(text, hostPodFor(name, "default", team), gpu[name], want) {
				return false, fmt.Sprintf("no gpuvc_team_gpu_utilization %s for %s on %s", want, name, gpu[name])
			}
		}
		if !hasUtilization(text, hostPodFor(sleepyGPUPod, "default", sleepy.name), sleepy.gpu, "0") {
			return false, fmt.Sprintf("no gpuvc_team_gpu_utilization 0 for %s on %s", sleepyGPUPod, sleepy.gpu)
		}
		return true, ""
	})

	// The window: the manager looks every 30 s (its default --idle-interval); the
	// event comes after 5 minutes of idleness, so within 5 minutes and two looks.
	// The sleepy team's GPUIdle is read in the same poll, while its control plane
	// is up (after the scale to zero a request would wake it).
	var event *corev1.Event
	poll.UntilSeenEvery(ctx, t, 2*time.Second, after+3*time.Minute, "GPUIdle on the idle pods in both teams' clusters",
		func(ctx context.Context) (bool, string, error) {
			sleepySeen := sleepy.lookForEvent(ctx)
			if event == nil {
				var why string
				if event, why = gpuIdleEvent(ctx, vc, "idle"); event == nil {
					return false, why, nil
				}
			}
			return sleepySeen, fmt.Sprintf("team %s's GPUIdle not seen yet", sleepy.name), nil
		})
	require.GreaterOrEqual(t, time.Since(began), after, "acted on before the window: %s", event.Message)
	require.Equal(t, corev1.EventTypeWarning, event.Type)
	for _, want := range []string{"at or below 10%", "for 5m", "action Evict"} {
		require.Contains(t, event.Message, want)
	}
	t.Logf("the team sees, %v after the GPU went idle: %s %s: %s", time.Since(began).Round(time.Second), event.Type, event.Reason, event.Message)

	eventually(ctx, t, "the idle pod evicted", func(ctx context.Context) (bool, string) {
		_, err := backend.Client().CoreV1().Pods(ns).Get(ctx, hostPodFor("idle", "default", team), metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, ""
		}
		return false, fmt.Sprint("host pod still there: ", err)
	})
	busy := waitVirtualPod(ctx, t, vc, "busy", running)
	require.Nil(t, busy.DeletionTimestamp, "the busy pod is being deleted")
	e, _ := gpuIdleEvent(ctx, vc, "busy")
	require.Nil(t, e, "the busy pod (85 %%) got an idle event: %+v", e)

	sleepy.checkAsleep(ctx, t, node, began)
	sleepy.wakeAndLook(ctx, t)
}

// gpuIdleEvent is the GPUIdle event of a virtual pod in the team's cluster.
func gpuIdleEvent(ctx context.Context, vc kubernetes.Interface, pod string) (*corev1.Event, string) {
	events, err := vc.CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + pod})
	if err != nil {
		return nil, err.Error()
	}
	var reasons []string
	for i, e := range events.Items {
		if e.Reason == "GPUIdle" {
			return &events.Items[i], ""
		}
		reasons = append(reasons, e.Reason)
	}
	return nil, fmt.Sprintf("events of %s: %v", pod, reasons)
}

// agentMetrics reads the real node's GPU agent metrics, as the manager does.
func agentMetrics(ctx context.Context) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+localnode.GPUAgentMetricsAddress()+"/metrics", nil)
	if err != nil {
		return "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

// hasUtilization: a gpuvc_team_gpu_utilization sample of pod on device uuid
// with value want.
func hasUtilization(metrics, pod, uuid, want string) bool {
	for _, l := range strings.Split(metrics, "\n") {
		if strings.HasPrefix(l, "gpuvc_team_gpu_utilization{") && strings.Contains(l, `pod="`+pod+`"`) &&
			strings.Contains(l, `UUID="`+uuid+`"`) && strings.HasSuffix(l, "} "+want) {
			return true
		}
	}
	return false
}
