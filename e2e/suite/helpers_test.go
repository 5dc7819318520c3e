package suite

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// eventually polls cond until it holds, failing with the last reason it gave.
func eventually(ctx context.Context, t *testing.T, what string, cond func(ctx context.Context) (bool, string)) {
	t.Helper()
	var last string
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		ok, why := cond(ctx)
		last = why
		return ok, nil
	})
	require.NoError(t, err, "%s never happened; last: %s", what, last)
}

// teamClient is a client of a team's own virtual cluster.
func teamClient(t *testing.T, kubeconfig string) kubernetes.Interface {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	require.NoError(t, err)
	cs, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	return cs
}

// createTeam creates a Ready team with the CLI and deletes it when the test ends.
func createTeam(ctx context.Context, t *testing.T, name string, flags ...string) {
	t.Helper()
	exportWhenNamespaceExists(ctx, name)
	r := gpuvc(t, append([]string{"team", "create", name, "--wait", "--timeout", "3m"}, flags...)...)
	require.Equal(t, 0, r.code, "stdout: %s\nstderr: %s", r.out, r.errOut)
	t.Cleanup(func() { gpuvc(t, "team", "delete", name, "--wait") })
}

// hostPodFor returns the host pod name vCluster gives a virtual pod.
func hostPodFor(name, virtualNS, team string) string { return name + "-x-" + virtualNS + "-x-" + team }

// submitPod puts a team's workload on the host. With containers running, it is
// created in the team's virtual cluster and vCluster syncs it; on the local backend
// the host pod is created as vCluster names and labels it.
func submitPod(ctx context.Context, t *testing.T, team string, pod *corev1.Pod) (*corev1.Pod, error) {
	t.Helper()
	if backend.RunsContainers() {
		t.Fatalf("virtual-cluster submission is exercised only on the kind backend")
	}
	host := pod.DeepCopy()
	host.Name = hostPodFor(pod.Name, "default", team)
	host.Namespace = "team-" + team
	if host.Labels == nil {
		host.Labels = map[string]string{}
	}
	host.Labels["vcluster.loft.sh/managed-by"] = team
	host.Labels["vcluster.loft.sh/namespace"] = "default"
	return backend.Client().CoreV1().Pods(host.Namespace).Create(ctx, host, metav1.CreateOptions{})
}
