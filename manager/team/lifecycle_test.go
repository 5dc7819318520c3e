package team_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gpuvcv1 "github.com/gpuvc/gpuvc/api/v1alpha1"
	"github.com/gpuvc/gpuvc/e2e/testsupport/testobj"
	"github.com/gpuvc/gpuvc/manager/team"
)

func hardGPUs(q *corev1.ResourceQuota) int64 {
	v := q.Spec.Hard["requests.nvidia.com/gpu"]
	return v.Value()
}

func TestQuotaChangeRollsOut(t *testing.T) {
	ctx := integration(t)
	createTeam(ctx, t, testobj.Team("grow", "a100").GPUs(2).Obj())
	quota := &corev1.ResourceQuota{}
	get(ctx, t, inNS("team-grow", team.QuotaName), quota, nil)
	require.Equal(t, int64(2), hardGPUs(quota))

	tm := &gpuvcv1.Team{}
	require.NoError(t, c.Get(ctx, ns("grow"), tm))
	orig := tm.DeepCopy()
	six := int32(6)
	tm.Spec.Quota.GPUs = &six
	require.NoError(t, c.Patch(ctx, tm, client.MergeFrom(orig)))
	get(ctx, t, inNS("team-grow", team.QuotaName), quota, func() (bool, string) {
		return hardGPUs(quota) == 6, "quota still " + quota.Spec.Hard.Name("requests.nvidia.com/gpu", resource.DecimalSI).String()
	})
	get(ctx, t, ns("grow"), tm, func() (bool, string) {
		return tm.Status.ObservedGeneration == tm.Generation, "status not caught up with the new generation"
	})
	// The Team tells of the change, once (the Team is cluster-scoped: its
	// events are in default).
	var told []string
	eventually(ctx, t, "a QuotaChanged event on Team grow", func(ctx context.Context) (bool, string) {
		events := &corev1.EventList{}
		if err := c.List(ctx, events, client.InNamespace("default")); err != nil {
			return false, err.Error()
		}
		told = nil
		for _, e := range events.Items {
			if e.InvolvedObject.Kind == "Team" && e.InvolvedObject.Name == "grow" && e.Reason == "QuotaChanged" {
				told = append(told, e.Message)
			}
		}
		return len(told) > 0, "none yet"
	})
	require.Equal(t, []string{"ResourceQuota team-grow/gpuvc-quota: requests.nvidia.com/gpu 2 → 6"}, told)
}

func TestHandEditsAndDeletionsAreRepaired(t *testing.T) {
	ctx := integration(t)
	createTeam(ctx, t, testobj.Team("drift", "a100").GPUs(2).Obj())
	quota := &corev1.ResourceQuota{}
	get(ctx, t, inNS("team-drift", team.QuotaName), quota, nil)

	// Someone raises the quota by hand: the manager puts its value back.
	orig := quota.DeepCopy()
	quota.Spec.Hard["requests.nvidia.com/gpu"] = resource.MustParse("64")
	require.NoError(t, c.Patch(ctx, quota, client.MergeFrom(orig)))
	get(ctx, t, inNS("team-drift", team.QuotaName), quota, func() (bool, string) {
		return hardGPUs(quota) == 2, "quota left at " + quota.Spec.Hard.Name("requests.nvidia.com/gpu", resource.DecimalSI).String()
	})

	// Someone deletes the quota and the default-deny policy: both come back.
	uid := quota.UID
	require.NoError(t, c.Delete(ctx, quota))
	policy := &networkingv1.NetworkPolicy{}
	get(ctx, t, inNS("team-drift", team.NetworkPolicyName), policy, nil)
	require.NoError(t, c.Delete(ctx, policy))
	get(ctx, t, inNS("team-drift", team.QuotaName), quota, func() (bool, string) {
		return quota.UID != uid, "the deleted quota was not recreated"
	})
	get(ctx, t, inNS("team-drift", team.NetworkPolicyName), &networkingv1.NetworkPolicy{}, nil)
}

func TestDeleteRemovesEverything(t *testing.T) {
	ctx := integration(t)
	tm := testobj.Team("gone", "a100").GPUs(1).MaxGPUsPerPod(1).Member("User", "ana").Obj()
	createTeam(ctx, t, tm)
	get(ctx, t, inNS("team-gone", "gone"), &appsv1.Deployment{}, nil)
	exportKubeconfig(ctx, t, "gone")
	got := &gpuvcv1.Team{}
	get(ctx, t, ns("gone"), got, func() (bool, string) { return conditionTrue(got, gpuvcv1.ConditionReady) })

	require.NoError(t, c.Delete(ctx, tm))
	gone(ctx, t, ns("gone"), &gpuvcv1.Team{})
	gone(ctx, t, ns("team-gone"), &corev1.Namespace{})
	// Helm's release records live in the namespace; the release is gone with it.
	secrets := &corev1.SecretList{}
	require.NoError(t, c.List(ctx, secrets, client.MatchingLabels{"owner": "helm", "name": "gone"}))
	require.Empty(t, secrets.Items)

	// Deleting again is harmless: the Team is already gone.
	require.True(t, client.IgnoreNotFound(c.Delete(context.Background(), tm)) == nil)
}

// TestRestrictedTeamRunsItsControlPlane: a team whose namespace enforces the
// "restricted" Pod Security Standard still gets its vCluster control plane admitted.
func TestRestrictedTeamRunsItsControlPlane(t *testing.T) {
	ctx := integration(t)
	tm := testobj.Team("strict", "a100").GPUs(1).Obj()
	tm.Spec.PodSecurity = "restricted"
	createTeam(ctx, t, tm)
	got := &gpuvcv1.Team{}
	get(ctx, t, ns("strict"), got, func() (bool, string) { return conditionTrue(got, gpuvcv1.ConditionVClusterReady) })
	nsObj := &corev1.Namespace{}
	require.NoError(t, c.Get(ctx, ns("team-strict"), nsObj))
	require.Equal(t, "restricted", nsObj.Labels["pod-security.kubernetes.io/enforce"])
}

// TestVClusterVersionChangeRollsOut: changing spec.vcluster.chartVersion upgrades
// the release; the control plane's image follows the version.
func TestVClusterVersionChangeRollsOut(t *testing.T) {
	ctx := integration(t)
	createTeam(ctx, t, testobj.Team("upgrade", "a100").GPUs(1).Obj())
	dep := &appsv1.Deployment{}
	get(ctx, t, inNS("team-upgrade", "upgrade"), dep, func() (bool, string) {
		return syncerImage(dep) == "ghcr.io/loft-sh/vcluster-oss:0.36.1", syncerImage(dep)
	})
	tm := &gpuvcv1.Team{}
	require.NoError(t, c.Get(ctx, ns("upgrade"), tm))
	orig := tm.DeepCopy()
	tm.Spec.VCluster = &gpuvcv1.VClusterSpec{ChartVersion: "0.36.0"}
	require.NoError(t, c.Patch(ctx, tm, client.MergeFrom(orig)))
	get(ctx, t, inNS("team-upgrade", "upgrade"), dep, func() (bool, string) {
		return syncerImage(dep) == "ghcr.io/loft-sh/vcluster-oss:0.36.0", syncerImage(dep)
	})
}

func syncerImage(d *appsv1.Deployment) string {
	for _, c := range d.Spec.Template.Spec.Containers {
		if c.Name == "syncer" {
			return c.Image
		}
	}
	return "no syncer container"
}
