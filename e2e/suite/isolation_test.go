package suite

import (
	"testing"

	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/gpuvc/gpuvc/e2e/testsupport/testobj"
)

// TestTwoTeamsAreIsolated: pods, secrets and network of one team are out of the
// other's reach.
func TestTwoTeamsAreIsolated(t *testing.T) {
	ctx := e2e(t)
	createTeam(ctx, t, "red", "--pool", "a100", "--gpus", "2")
	createTeam(ctx, t, "blue", "--pool", "h100", "--gpus", "2")

	// Pods: a red workload that names blue's pool is pulled back into red's pool
	// or refused; it never lands on h100.
	p, err := submitPod(ctx, t, "red", testobj.Pod("sneaky", "default").GPUs("1").
		TolerateTaint("gpuvc.dev/pool", "h100").NodeSelector("gpuvc.dev/pool", "h100").Obj())
	if err == nil {
		require.Equal(t, "a100", p.Spec.NodeSelector["gpuvc.dev/pool"])
		for _, tol := range p.Spec.Tolerations {
			require.NotEqual(t, "h100", tol.Value, "blue's pool toleration survived admission")
		}
	}

	// Secrets: every service account of blue's namespace is refused red's kubeconfig.
	sas, err := backend.Client().CoreV1().ServiceAccounts("team-blue").List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	for _, sa := range sas.Items {
		cfg := rest.CopyConfig(backend.Config())
		cfg.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:team-blue:" + sa.Name,
			Groups: []string{"system:serviceaccounts", "system:serviceaccounts:team-blue"}}
		cs, err := kubernetes.NewForConfig(cfg)
		require.NoError(t, err)
		_, err = cs.CoreV1().Secrets("team-red").Get(ctx, "gpuvc-kubeconfig", metav1.GetOptions{})
		require.True(t, apierrors.IsForbidden(err), "%s read red's kubeconfig: %v", sa.Name, err)
		_, err = cs.CoreV1().Pods("team-red").List(ctx, metav1.ListOptions{})
		require.True(t, apierrors.IsForbidden(err), "%s listed red's pods: %v", sa.Name, err)
	}

	// Network: both namespaces deny traffic from other namespaces by default.
	for _, ns := range []string{"team-red", "team-blue"} {
		np, err := backend.Client().NetworkingV1().NetworkPolicies(ns).Get(ctx, "gpuvc-default-deny", metav1.GetOptions{})
		require.NoError(t, err)
		require.Len(t, np.Spec.Ingress, 1)
		for _, from := range np.Spec.Ingress[0].From {
			require.Nil(t, from.NamespaceSelector, "ingress allowed from other namespaces in %s", ns)
		}
	}
	if !backend.RunsContainers() {
		t.Log("local backend: no CNI enforces NetworkPolicy here; the policy objects are checked, not traffic")
	}
}
