package suite

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/gpuvc/gpuvc/e2e/testsupport/poll"
)

// eventually polls cond for up to 2 minutes until it holds, failing with the
// last reason it gave that was not caused by the poll's deadline (a request cut
// by it, the client's rate limiter refusing to wait past it: poll.EndedBy), and
// the deadline's error apart.
func eventually(ctx context.Context, t *testing.T, what string, cond func(ctx context.Context) (bool, string)) {
	t.Helper()
	poll.UntilSeenEvery(ctx, t, 200*time.Millisecond, 2*time.Minute, what+" never happened", func(ctx context.Context) (bool, string, error) {
		ok, why := cond(ctx)
		return ok, why, nil
	})
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
	t.Cleanup(func() { dumpTeamIfFailed(t, name) }) // runs first: the team still exists
	if backend.RunsContainers() {
		// Ready means vCluster exported its kubeconfig; kube-proxy may need a moment
		// more to route the new Service's address.
		vc := teamClient(t, teamKubeconfig(t, name))
		eventually(ctx, t, "team "+name+"'s API server answering", func(ctx context.Context) (bool, string) {
			_, err := vc.Discovery().ServerVersion()
			return err == nil, fmt.Sprint(err)
		})
	}
}

// hostPodFor returns the host pod name vCluster gives a virtual pod.
func hostPodFor(name, virtualNS, team string) string { return name + "-x-" + virtualNS + "-x-" + team }

// submitPod puts a team's workload on the host and returns the host pod. Where
// vCluster runs, the pod is created in the team's virtual cluster through the
// team's kubeconfig and vCluster syncs it; a refusal on the host comes back as the
// warning vCluster records on the virtual pod. On the kwok-only backend the host
// pod is created as vCluster names and labels it.
func submitPod(ctx context.Context, t *testing.T, team string, pod *corev1.Pod) (*corev1.Pod, error) {
	t.Helper()
	if backend.RunsContainers() {
		return submitVirtualPod(ctx, t, team, pod)
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

// submitVirtualPod creates pod in the team's virtual cluster (namespace default)
// and waits until vCluster has created its host pod, or has given up on it with a
// warning event on the virtual pod.
func submitVirtualPod(ctx context.Context, t *testing.T, team string, pod *corev1.Pod) (*corev1.Pod, error) {
	t.Helper()
	vc := teamClient(t, teamKubeconfig(t, team))
	v := pod.DeepCopy()
	v.Namespace = "default"
	if _, err := vc.CoreV1().Pods(v.Namespace).Create(ctx, v, metav1.CreateOptions{}); err != nil {
		return nil, fmt.Errorf("creating the virtual pod: %w", err)
	}
	t.Cleanup(func() {
		_ = vc.CoreV1().Pods(v.Namespace).Delete(context.Background(), v.Name, metav1.DeleteOptions{})
	})
	var host *corev1.Pod
	var refusal error
	eventually(ctx, t, "vCluster syncs "+v.Name+" to the host", func(ctx context.Context) (bool, string) {
		p, err := backend.Client().CoreV1().Pods("team-"+team).Get(ctx, hostPodFor(v.Name, v.Namespace, team), metav1.GetOptions{})
		if err == nil {
			host = p
			return true, ""
		}
		events, lerr := vc.CoreV1().Events(v.Namespace).List(ctx, metav1.ListOptions{
			FieldSelector: "involvedObject.name=" + v.Name + ",type=Warning",
		})
		if lerr != nil {
			return false, lerr.Error()
		}
		for _, e := range events.Items {
			if strings.Contains(e.Message, "denied") || strings.Contains(e.Message, "forbidden") {
				refusal = fmt.Errorf("%s: %s", e.Reason, e.Message)
				return true, ""
			}
		}
		return false, err.Error()
	})
	return host, refusal
}

// teamKubeconfig writes the team's kubeconfig with the CLI, once per test, and
// returns its path.
func teamKubeconfig(t *testing.T, team string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), team+".kubeconfig")
	r := gpuvc(t, "team", "kubeconfig", team, "-f", path)
	require.Equal(t, 0, r.code, r.errOut)
	return path
}
