package team_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/gpuvc/gpuvc/api/contract"
	gpuvcv1 "github.com/gpuvc/gpuvc/api/v1alpha1"
	"github.com/gpuvc/gpuvc/e2e/testsupport/testobj"
	"github.com/gpuvc/gpuvc/manager/team"
)

// impersonate returns a clientset acting as the given user and groups.
func impersonate(t *testing.T, user string, groups ...string) kubernetes.Interface {
	cfg := rest.CopyConfig(host.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: groups}
	cs, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	return cs
}

func TestTwoTeamsShareNothing(t *testing.T) {
	ctx := integration(t)
	createTeam(ctx, t, testobj.Team("alpha", "a100").GPUs(2).Member("User", "alice").Obj())
	createTeam(ctx, t, testobj.Team("beta", "h100").GPUs(3).Member("User", "bob").Obj())
	for _, name := range []string{"alpha", "beta"} {
		exportKubeconfig(ctx, t, name)
		tm := &gpuvcv1.Team{}
		get(ctx, t, ns(name), tm, func() (bool, string) { return conditionTrue(tm, gpuvcv1.ConditionReady) })
	}

	alpha, beta := &gpuvcv1.Team{}, &gpuvcv1.Team{}
	require.NoError(t, c.Get(ctx, ns("alpha"), alpha))
	require.NoError(t, c.Get(ctx, ns("beta"), beta))
	require.NotEqual(t, alpha.Status.Namespace, beta.Status.Namespace)
	qa, qb := &corev1.ResourceQuota{}, &corev1.ResourceQuota{}
	require.NoError(t, c.Get(ctx, inNS("team-alpha", team.QuotaName), qa))
	require.NoError(t, c.Get(ctx, inNS("team-beta", team.QuotaName), qb))
	require.NotEqual(t, qa.UID, qb.UID)
	require.Equal(t, int64(2), hardGPUs(qa))
	require.Equal(t, int64(3), hardGPUs(qb))
	ka, kb := &corev1.Secret{}, &corev1.Secret{}
	require.NoError(t, c.Get(ctx, inNS("team-alpha", contract.KubeconfigSecretName), ka))
	require.NoError(t, c.Get(ctx, inNS("team-beta", contract.KubeconfigSecretName), kb))
	require.NotEqual(t, string(ka.Data["config"]), string(kb.Data["config"]))

	// Every service account in beta's namespace — the vCluster's and the default
	// one — is refused alpha's kubeconfig; so is beta's member. Alpha's member may
	// read it.
	sas, err := host.Client.CoreV1().ServiceAccounts("team-beta").List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	require.NotEmpty(t, sas.Items)
	for _, sa := range sas.Items {
		user := "system:serviceaccount:team-beta:" + sa.Name
		_, err := impersonate(t, user, "system:serviceaccounts", "system:serviceaccounts:team-beta").
			CoreV1().Secrets("team-alpha").Get(ctx, contract.KubeconfigSecretName, metav1.GetOptions{})
		require.True(t, apierrors.IsForbidden(err), "%s read team-alpha's kubeconfig: %v", user, err)
		_, err = impersonate(t, user, "system:serviceaccounts", "system:serviceaccounts:team-beta").
			CoreV1().Pods("team-alpha").List(ctx, metav1.ListOptions{})
		require.True(t, apierrors.IsForbidden(err), "%s listed team-alpha's pods: %v", user, err)
	}
	_, err = impersonate(t, "bob").CoreV1().Secrets("team-alpha").Get(ctx, contract.KubeconfigSecretName, metav1.GetOptions{})
	require.True(t, apierrors.IsForbidden(err), "bob (beta) read alpha's kubeconfig: %v", err)
	_, err = impersonate(t, "alice").CoreV1().Secrets("team-alpha").Get(ctx, contract.KubeconfigSecretName, metav1.GetOptions{})
	require.NoError(t, err, "alice (alpha) must read her own team's kubeconfig")
	_, err = impersonate(t, "alice").CoreV1().Secrets("team-alpha").Get(ctx, "vc-alpha", metav1.GetOptions{})
	require.True(t, apierrors.IsForbidden(err), "members read only the kubeconfig Secret gpuvc exports: %v", err)
}
