package localnode_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/gpuvc/gpuvc/kind/localnode"
)

// TestNetworkPolicy: with kube-router's policy controller, a default-deny ingress
// policy in team-b (pods of team-b still allowed) blocks team-a → team-b while
// team-b → team-b keeps working.
func TestNetworkPolicy(t *testing.T) {
	cp := forTest(t)
	ctx := testContext(t)
	startNode(t, ctx, cp, localnode.Options{NetworkPolicy: true})
	a := namespace(t, ctx, cp, "team-a")
	b := namespace(t, ctx, cp, "team-b")
	server, _ := runPod(t, ctx, cp, workloadPod("server", b, "exec nc -ll -p 8080 -e /bin/echo pong").Obj())
	fromA, _ := runPod(t, ctx, cp, workloadPod("client", a, "exec sleep 3600").Obj())
	fromB, _ := runPod(t, ctx, cp, workloadPod("client", b, "exec sleep 3600").Obj())
	dial := []string{"nc", "-w", "1", server.Status.PodIP, "8080"}
	pollExec(t, ctx, cp, a, fromA.Name, "pong", dial...)
	pollExec(t, ctx, cp, b, fromB.Name, "pong", dial...)

	policy := &networkingv1.NetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "same-namespace-only", Namespace: b},
		Spec: networkingv1.NetworkPolicySpec{
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
			Ingress:     []networkingv1.NetworkPolicyIngressRule{{From: []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{}}}}},
		},
	}
	created := time.Now()
	_, err := cp.Client.NetworkingV1().NetworkPolicies(b).Create(ctx, policy, metav1.CreateOptions{})
	require.NoError(t, err)
	var out string
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		out, _ = execPod(ctx, cp, a, fromA.Name, dial...)
		return !strings.Contains(out, "pong"), nil
	})
	require.NoError(t, err, "team-a still reaches team-b: %q", out)
	t.Logf("policy enforced %v after creation", time.Since(created).Round(time.Millisecond))
	// Blocked for good, not a hiccup; same-namespace traffic still flows.
	for range 3 {
		out, _ = execPod(ctx, cp, a, fromA.Name, dial...)
		require.NotContains(t, out, "pong")
		pollExec(t, ctx, cp, b, fromB.Name, "pong", dial...)
	}
}
