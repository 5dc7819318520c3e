package team_test

import (
	"context"
	"errors"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/gpuvc/gpuvc/api/contract"
	gpuvcv1 "github.com/gpuvc/gpuvc/api/v1alpha1"
	"github.com/gpuvc/gpuvc/e2e/testsupport/testobj"
	"github.com/gpuvc/gpuvc/manager/team"
	"github.com/gpuvc/gpuvc/vclusters"
)

// TestReadyTeamReportsEverythingOnce: a team whose release runs and whose
// kubeconfig is exported is Ready at its generation, and says so in one event.
func TestReadyTeamReportsEverythingOnce(t *testing.T) {
	tm := testobj.Team("ml", "a100").GPUs(1).Obj()
	tm.Generation = 4
	vc := readyVClusters()
	u := newUnit(t, vc, []client.Object{tm})

	result, err := u.reconcile(t, "ml")
	require.NoError(t, err)
	require.Equal(t, reconcile.Result{}, result)
	got := u.team(t, "ml")
	require.Equal(t, int64(4), got.Status.ObservedGeneration)
	requireConditions(t, got, map[string]*cond{
		gpuvcv1.ConditionHostResourcesReady: isTrue("Provisioned"),
		gpuvcv1.ConditionVClusterReady:      isTrue("ControlPlaneReady"),
		gpuvcv1.ConditionKubeconfigReady:    isTrue("Exported"),
		gpuvcv1.ConditionReady:              isTrue("Ready"),
	})
	require.Equal(t, "team-ml", got.Status.Namespace)
	require.Equal(t, contract.KubeconfigSecretName, got.Status.KubeconfigSecret)
	secret := &corev1.Secret{}
	require.NoError(t, u.c.Get(context.Background(), inNS("team-ml", contract.KubeconfigSecretName), secret))
	require.Equal(t, vc.kubeconfig, secret.Data[contract.KubeconfigSecretKey])
	require.Equal(t, []string{"Normal ReleaseInstalled", "Normal Ready"}, eventKinds(u.drain()))

	// Nothing changed: no new revision, and Ready is not announced again.
	vc.applied = vclusters.ApplyResult{Change: vclusters.Unchanged, Revision: 1}
	_, err = u.reconcile(t, "ml")
	require.NoError(t, err)
	require.Empty(t, u.drain())
	requireConditions(t, u.team(t, "ml"), map[string]*cond{gpuvcv1.ConditionReady: isTrue("Ready")})
}

// TestKubeconfigPointsAtTheServiceAddress: a server URL naming the Service's
// address is filled in once the Service has one.
func TestKubeconfigPointsAtTheServiceAddress(t *testing.T) {
	tm := testobj.Team("ml", "a100").GPUs(1).Obj()
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "ml", Namespace: "team-ml"},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, ClusterIP: "10.96.0.7",
			Ports: []corev1.ServicePort{{Name: "https", Port: 443, NodePort: 30443}}},
	}
	vc := readyVClusters()
	u := newUnit(t, vc, []client.Object{tm, svc}, withOptions(team.Options{
		ServerURL: func(_ *gpuvcv1.Team, a team.ServiceAddress) string {
			return "https://" + a.ClusterIP + ":" + itoa(a.NodePort)
		},
		ServerURLUsesService: true,
	}))
	_, err := u.reconcile(t, "ml")
	require.NoError(t, err)
	require.Equal(t, "https://10.96.0.7:30443", vc.lastSpec.KubeconfigServer)
	requireConditions(t, u.team(t, "ml"), map[string]*cond{gpuvcv1.ConditionReady: isTrue("Ready")})
}

// TestConditionsOfAnOlderGenerationDoNotMakeReady: a condition left True by an
// earlier generation does not count once the spec has changed.
func TestConditionsOfAnOlderGenerationDoNotMakeReady(t *testing.T) {
	tm := testobj.Team("ml", "a100").GPUs(1).Obj()
	tm.Generation = 2
	tm.Finalizers = []string{gpuvcv1.Finalizer}
	for _, typ := range []string{gpuvcv1.ConditionHostResourcesReady, gpuvcv1.ConditionVClusterReady, gpuvcv1.ConditionKubeconfigReady, gpuvcv1.ConditionReady} {
		apimeta.SetStatusCondition(&tm.Status.Conditions, metav1.Condition{
			Type: typ, Status: metav1.ConditionTrue, Reason: "Before", ObservedGeneration: 1, LastTransitionTime: metav1.NewTime(now),
		})
	}
	vc := readyVClusters()
	vc.readyErr = errors.New("reading the release: connection refused")
	u := newUnit(t, vc, []client.Object{tm})

	_, err := u.reconcile(t, "ml")
	require.Error(t, err)
	got := u.team(t, "ml")
	ready := apimeta.FindStatusCondition(got.Status.Conditions, gpuvcv1.ConditionReady)
	require.Equal(t, metav1.ConditionFalse, ready.Status)
	require.Equal(t, int64(2), ready.ObservedGeneration)
	require.Contains(t, ready.Message, gpuvcv1.ConditionVClusterReady)
}

func itoa(n int32) string { return strconv.Itoa(int(n)) }
