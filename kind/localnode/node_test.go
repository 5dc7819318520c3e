package localnode_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuvc/gpuvc/kind/localcluster"
	"github.com/gpuvc/gpuvc/kind/localnode"
)

// TestPodsOnRealNode: a labelled, tainted node registers and gets Ready; a pod of
// the workload image runs and its logs and exec work through the API server;
// pods reach the `kubernetes` Service and each other.
func TestPodsOnRealNode(t *testing.T) {
	cp := forTest(t)
	ctx := testContext(t)
	taint := corev1.Taint{Key: "gpuvc.dev/pool", Value: "real", Effect: corev1.TaintEffectNoSchedule}
	n := startNode(t, ctx, cp, localnode.Options{
		Labels: map[string]string{"gpuvc.dev/pool": "real"},
		Taints: []corev1.Taint{taint},
	})
	node, err := cp.Client.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{})
	require.NoError(t, err)
	require.Equal(t, "real", node.Labels["gpuvc.dev/pool"])
	require.Contains(t, node.Spec.Taints, taint)
	require.Contains(t, node.Status.Addresses, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: localnode.NodeIP.String()})
	ns := namespace(t, ctx, cp, "real-node")
	tolerate := func(p *corev1.Pod) {
		p.Spec.Tolerations = []corev1.Toleration{{Key: taint.Key, Operator: corev1.TolerationOpEqual, Value: taint.Value, Effect: taint.Effect}}
	}

	t.Run("pod runs, logs and exec work", func(t *testing.T) {
		pod, took := runPod(t, ctx, cp, workloadPod("hello", ns, "echo hello from $(hostname); exec sleep 3600").Edit(tolerate).Obj())
		t.Logf("pod create → Running: %v", took.Round(1e6))
		require.Equal(t, n.Name, pod.Spec.NodeName)
		require.NotEmpty(t, pod.Status.PodIP)
		logs, err := podLogs(ctx, cp, ns, "hello")
		require.NoError(t, err)
		require.Contains(t, logs, "hello from hello")
		out, err := execPod(ctx, cp, ns, "hello", "id", "-u")
		require.NoError(t, err)
		require.Equal(t, "65532", strings.TrimSpace(out))
	})

	t.Run("pod runs to completion", func(t *testing.T) {
		_, err := cp.Client.CoreV1().Pods(ns).Create(ctx, workloadPod("once", ns, "echo done").Edit(tolerate).Edit(func(p *corev1.Pod) {
			p.Spec.RestartPolicy = corev1.RestartPolicyNever
		}).Obj(), metav1.CreateOptions{})
		require.NoError(t, err)
		waitPod(t, ctx, cp, ns, "once", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodSucceeded })
		logs, err := podLogs(ctx, cp, ns, "once")
		require.NoError(t, err)
		require.Equal(t, "done\n", logs)
	})

	t.Run("pods reach the API server and each other", func(t *testing.T) {
		server, _ := runPod(t, ctx, cp, workloadPod("server", ns, "exec nc -ll -p 8080 -e /bin/echo pong").Edit(tolerate).Obj())
		client, _ := runPod(t, ctx, cp, workloadPod("client", ns, "exec sleep 3600").Edit(tolerate).Obj())
		took := pollExec(t, ctx, cp, ns, client.Name, "pong", "nc", "-w", "2", server.Status.PodIP, "8080")
		t.Logf("pod → pod answered after %v", took.Round(1e6))
		// The kubernetes Service (kube-proxy → the API server on the node IP).
		// Busybox's TLS cannot talk to the API server, so the probe is plain HTTP,
		// which Go's TLS server answers with a telling 400.
		took = pollExec(t, ctx, cp, ns, client.Name, "Client sent an HTTP request to an HTTPS server",
			"sh", "-c", `printf 'GET /version HTTP/1.0\r\n\r\n' | nc -w 2 `+localcluster.ServiceIP+" 443")
		t.Logf("pod → kubernetes Service answered after %v", took.Round(1e6))
	})
}
