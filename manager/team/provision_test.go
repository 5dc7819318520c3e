package team_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpuvc/gpuvc/api/contract"
	gpuvcv1 "github.com/gpuvc/gpuvc/api/v1alpha1"
	"github.com/gpuvc/gpuvc/e2e/testsupport/managertest"
	"github.com/gpuvc/gpuvc/e2e/testsupport/testobj"
	"github.com/gpuvc/gpuvc/manager/team"
	"github.com/gpuvc/gpuvc/syncer/celpolicy"
)

// exportKubeconfig stands in for vCluster exporting its kubeconfig, once the
// team's namespace exists.
func exportKubeconfig(ctx context.Context, t *testing.T, teamName string) {
	t.Helper()
	get(ctx, t, ns(gpuvcv1.HostNamespace(teamName)), &corev1.Namespace{}, nil)
	require.NoError(t, managertest.ExportKubeconfig(ctx, host.Client, teamName))
}

func TestCreateProvisionsEveryHostObjectAndTheVCluster(t *testing.T) {
	ctx := integration(t)
	want := testobj.Team("fraud", "a100").GPUs(4).MIG("1g.10gb", 4).CPU("64").Memory("256Gi").Pods(100).
		MaxGPUsPerPod(2).Fractions().Member("Group", "fraud-ml").Egress("10.20.0.0/16").Obj()
	createTeam(ctx, t, want)
	hostNS := "team-fraud"

	nsObj := &corev1.Namespace{}
	get(ctx, t, ns(hostNS), nsObj, nil)
	require.Equal(t, "fraud", nsObj.Labels[contract.LabelTeam])
	require.Equal(t, "a100", nsObj.Labels[contract.LabelPool])
	require.Equal(t, "baseline", nsObj.Labels["pod-security.kubernetes.io/enforce"])

	// The CEL fence judges by the same policy as the webhook: every key is written.
	params := &corev1.ConfigMap{}
	get(ctx, t, inNS(hostNS, celpolicy.ParamsName), params, nil)
	require.Equal(t, "a100", params.Data[celpolicy.KeyPool])
	require.Equal(t, "true", params.Data[celpolicy.KeyFractions])
	require.Contains(t, params.Data[celpolicy.KeyMIGProfiles], "1g.10gb")
	require.Equal(t, "81920", params.Data[celpolicy.KeyGPUMemoryMiB], "memory of the pool's A100-80GB")

	quota := &corev1.ResourceQuota{}
	get(ctx, t, inNS(hostNS, team.QuotaName), quota, nil)
	wantHard := corev1.ResourceList{
		"requests.nvidia.com/gpu":         resource.MustParse("4"),
		"requests.nvidia.com/mig-1g.10gb": resource.MustParse("4"),
		"requests.cpu":                    resource.MustParse("64"),
		"requests.memory":                 resource.MustParse("256Gi"),
		"pods":                            resource.MustParse("100"),
	}
	require.Len(t, quota.Spec.Hard, len(wantHard))
	for k, v := range wantHard {
		got := quota.Spec.Hard[k]
		require.Zero(t, v.Cmp(got), "quota %s: want %s, got %s", k, v.String(), got.String())
	}

	limits := &corev1.LimitRange{}
	get(ctx, t, inNS(hostNS, team.LimitRangeName), limits, nil)
	require.Len(t, limits.Spec.Limits, 2)
	for _, l := range limits.Spec.Limits {
		gpuMax := l.Max["nvidia.com/gpu"]
		require.Equal(t, int64(2), gpuMax.Value(), "%s maximum", l.Type)
	}

	deny := &networkingv1.NetworkPolicy{}
	get(ctx, t, inNS(hostNS, team.NetworkPolicyName), deny, nil)
	require.ElementsMatch(t, []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress}, deny.Spec.PolicyTypes)
	require.Empty(t, deny.Spec.PodSelector.MatchLabels, "default deny selects every pod")
	require.Contains(t, egressCIDRs(deny), "10.20.0.0/16")
	get(ctx, t, inNS(hostNS, team.ControlPlanePolicyName), &networkingv1.NetworkPolicy{}, nil)
	// Reservation pods record their GPU through the API server: only they get its ports.
	reservations := &networkingv1.NetworkPolicy{}
	get(ctx, t, inNS(hostNS, team.ReservationPolicyName), reservations, nil)
	require.Equal(t, map[string]string{"gpuvc.dev/role": "reservation"}, reservations.Spec.PodSelector.MatchLabels)
	require.Equal(t, []networkingv1.PolicyType{networkingv1.PolicyTypeEgress}, reservations.Spec.PolicyTypes)

	binding := &rbacv1.RoleBinding{}
	get(ctx, t, inNS(hostNS, team.MemberRoleName), binding, nil)
	require.Equal(t, []rbacv1.Subject{{Kind: "Group", APIGroup: rbacv1.GroupName, Name: "fraud-ml"}}, binding.Subjects)

	// The real vCluster chart, installed by the Helm SDK: its control plane (a
	// Deployment with an ephemeral datastore) lands on the CPU pool; GPU pools are
	// tainted.
	get(ctx, t, inNS(hostNS, "fraud"), &appsv1.Deployment{}, nil)
	eventually(ctx, t, "vCluster control-plane pod scheduled", func(ctx context.Context) (bool, string) {
		pods := &corev1.PodList{}
		if err := c.List(ctx, pods, client.InNamespace(hostNS), client.MatchingLabels{"app": "vcluster", "release": "fraud"}); err != nil {
			return false, err.Error()
		}
		for _, p := range pods.Items {
			if p.Spec.NodeName == "system-0" && p.Status.Phase == corev1.PodRunning {
				return true, ""
			}
		}
		return false, "no Running control-plane pod on system-0"
	})
	tm := &gpuvcv1.Team{}
	get(ctx, t, ns("fraud"), tm, func() (bool, string) { return conditionTrue(tm, gpuvcv1.ConditionVClusterReady) })
	ok, _ := conditionTrue(tm, gpuvcv1.ConditionReady)
	require.False(t, ok, "Ready before the kubeconfig exists")

	exportKubeconfig(ctx, t, "fraud")
	get(ctx, t, ns("fraud"), tm, func() (bool, string) { return conditionTrue(tm, gpuvcv1.ConditionReady) })
	require.Equal(t, hostNS, tm.Status.Namespace)
	require.Equal(t, contract.KubeconfigSecretName, tm.Status.KubeconfigSecret)

	secret := &corev1.Secret{}
	get(ctx, t, inNS(hostNS, contract.KubeconfigSecretName), secret, nil)
	cfg, err := clientcmd.Load(secret.Data[contract.KubeconfigSecretKey])
	require.NoError(t, err)
	require.Equal(t, "fraud", cfg.CurrentContext)
	require.Equal(t, "https://fraud.team-fraud.svc", cfg.Clusters[cfg.Contexts["fraud"].Cluster].Server)
}

func egressCIDRs(p *networkingv1.NetworkPolicy) []string {
	var cidrs []string
	for _, r := range p.Spec.Egress {
		for _, to := range r.To {
			if to.IPBlock != nil {
				cidrs = append(cidrs, to.IPBlock.CIDR)
			}
		}
	}
	return cidrs
}
