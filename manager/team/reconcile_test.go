package team_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	gpuvcv1 "github.com/gpuvc/gpuvc/api/v1alpha1"
	"github.com/gpuvc/gpuvc/e2e/testsupport/testobj"
	"github.com/gpuvc/gpuvc/manager/team"
	"github.com/gpuvc/gpuvc/vclusters"
)

// TestReconcileBranches drives one Reconcile of a new Team through each way
// provisioning can end, and checks what the Team's status and events say.
func TestReconcileBranches(t *testing.T) {
	boom := errors.New("boom")
	for name, tc := range map[string]struct {
		team       *gpuvcv1.Team
		script     func(*fakeVClusters)
		opts       []unitOption
		wantResult reconcile.Result
		wantErr    bool
		want       map[string]*cond
		wantEvents []string // "<type> <reason>" in order
		wantCalls  []string
	}{
		"a MIG profile no GPU offers is an invalid spec, not retried": {
			team: testobj.Team("ml", "a100").MIG("1g.7gb", 1).Obj(),
			want: map[string]*cond{
				gpuvcv1.ConditionHostResourcesReady: isFalse("InvalidSpec"),
				gpuvcv1.ConditionVClusterReady:      nil,
				gpuvcv1.ConditionReady:              isFalse("InvalidSpec"),
			},
			wantEvents: []string{"Warning InvalidSpec"},
		},
		"a host step that fails names the step and is retried": {
			team: testobj.Team("ml", "a100").GPUs(1).Obj(),
			opts: []unitOption{withInterceptors(interceptor.Funcs{
				Apply: func(ctx context.Context, c client.WithWatch, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
					return boom
				},
			})},
			wantErr: true,
			want: map[string]*cond{
				gpuvcv1.ConditionHostResourcesReady: isFalse("NamespaceFailed"),
				gpuvcv1.ConditionReady:              isFalse("NamespaceFailed"),
			},
			wantEvents: []string{"Warning NamespaceFailed"},
		},
		"a release that fails to install is retried": {
			team:    testobj.Team("ml", "a100").GPUs(1).Obj(),
			script:  func(f *fakeVClusters) { f.applyErr = boom },
			wantErr: true,
			want: map[string]*cond{
				gpuvcv1.ConditionHostResourcesReady: isTrue("Provisioned"),
				gpuvcv1.ConditionVClusterReady:      isFalse("ReleaseFailed"),
				gpuvcv1.ConditionKubeconfigReady:    nil,
				gpuvcv1.ConditionReady:              isFalse("ReleaseFailed"),
			},
			wantEvents: []string{"Warning ReleaseFailed"},
			wantCalls:  []string{"Apply team-ml/ml"},
		},
		"a release spec vCluster refuses waits for a spec change": {
			team:   testobj.Team("ml", "a100").GPUs(1).Obj(),
			script: func(f *fakeVClusters) { f.applyErr = fmt.Errorf("%w: Name: bad", vclusters.ErrInvalidSpec) },
			want: map[string]*cond{
				gpuvcv1.ConditionVClusterReady: isFalse("ReleaseFailed"),
				gpuvcv1.ConditionReady:         isFalse("ReleaseFailed"),
			},
			wantEvents: []string{"Warning ReleaseFailed"},
			wantCalls:  []string{"Apply team-ml/ml"},
		},
		"a starting control plane is checked again after the wait interval": {
			team: testobj.Team("ml", "a100").GPUs(1).Obj(),
			script: func(f *fakeVClusters) {
				f.ready = vclusters.Readiness{Reason: "ControlPlaneStarting", Message: "0/1 replicas ready"}
			},
			wantResult: reconcile.Result{RequeueAfter: waitInterval},
			want: map[string]*cond{
				gpuvcv1.ConditionHostResourcesReady: isTrue("Provisioned"),
				gpuvcv1.ConditionVClusterReady:      isFalse("ControlPlaneStarting"),
				gpuvcv1.ConditionKubeconfigReady:    nil,
				gpuvcv1.ConditionReady:              isFalse("ControlPlaneStarting"),
			},
			wantEvents: []string{"Normal ReleaseInstalled"},
			wantCalls:  []string{"Apply team-ml/ml", "Ready team-ml/ml"},
		},
		"an unreadable control plane is retried and reported as provisioning": {
			team:    testobj.Team("ml", "a100").GPUs(1).Obj(),
			script:  func(f *fakeVClusters) { f.readyErr = boom },
			wantErr: true,
			want: map[string]*cond{
				gpuvcv1.ConditionVClusterReady: nil,
				gpuvcv1.ConditionReady:         isFalse("Provisioning"),
			},
			wantEvents: []string{"Normal ReleaseInstalled"},
			wantCalls:  []string{"Apply team-ml/ml", "Ready team-ml/ml"},
		},
		"a kubeconfig not yet exported is checked again after the wait interval": {
			team:       testobj.Team("ml", "a100").GPUs(1).Obj(),
			script:     func(f *fakeVClusters) { f.kubeconfigErr = boom },
			wantResult: reconcile.Result{RequeueAfter: waitInterval},
			want: map[string]*cond{
				gpuvcv1.ConditionVClusterReady:   isTrue("ControlPlaneReady"),
				gpuvcv1.ConditionKubeconfigReady: isFalse("KubeconfigPending"),
				gpuvcv1.ConditionReady:           isFalse("KubeconfigPending"),
			},
			wantEvents: []string{"Normal ReleaseInstalled"},
			wantCalls:  []string{"Apply team-ml/ml", "Ready team-ml/ml", "Kubeconfig team-ml/ml"},
		},
		"a server URL naming a Service that has no address yet waits for it": {
			team: testobj.Team("ml", "a100").GPUs(1).Obj(),
			opts: []unitOption{withOptions(team.Options{
				ServerURL:            func(*gpuvcv1.Team, team.ServiceAddress) string { return "https://10.0.0.1" },
				ServerURLUsesService: true,
			})},
			wantResult: reconcile.Result{RequeueAfter: waitInterval},
			want: map[string]*cond{
				gpuvcv1.ConditionKubeconfigReady: isFalse("KubeconfigPending"),
				gpuvcv1.ConditionReady:           isFalse("KubeconfigPending"),
			},
			wantEvents: []string{"Normal ReleaseInstalled"},
			wantCalls:  []string{"Apply team-ml/ml", "Ready team-ml/ml"},
		},
	} {
		t.Run(name, func(t *testing.T) {
			vc := readyVClusters()
			if tc.script != nil {
				tc.script(vc)
			}
			u := newUnit(t, vc, []client.Object{tc.team}, tc.opts...)
			result, err := u.reconcile(t, tc.team.Name)
			require.Equal(t, tc.wantErr, err != nil, "error: %v", err)
			require.Equal(t, tc.wantResult, result)

			got := u.team(t, tc.team.Name)
			require.True(t, controllerutil.ContainsFinalizer(got, gpuvcv1.Finalizer), "finalizer added")
			require.Equal(t, got.Generation, got.Status.ObservedGeneration)
			requireConditions(t, got, tc.want)
			require.Equal(t, tc.wantEvents, eventKinds(u.drain()))
			require.Equal(t, tc.wantCalls, vc.called())
		})
	}
}

// TestInvalidSpecCreatesNothing: a Team whose MIG profile no GPU offers gets no
// namespace and no release, and its condition names the profile.
func TestInvalidSpecCreatesNothing(t *testing.T) {
	tm := testobj.Team("ml", "a100").MIG("1g.7gb", 1).Obj()
	u := newUnit(t, readyVClusters(), []client.Object{tm})
	_, err := u.reconcile(t, "ml")
	require.NoError(t, err)

	got := u.team(t, "ml")
	require.Contains(t, conditionMessage(got, gpuvcv1.ConditionHostResourcesReady), "1g.7gb")
	require.Empty(t, got.Status.Namespace)
	err = u.c.Get(context.Background(), ns("team-ml"), &corev1.Namespace{})
	require.True(t, apierrors.IsNotFound(err), "namespace: %v", err)
}

// eventKinds keeps "<type> <reason>" of each recorded event.
func eventKinds(events []string) []string {
	var out []string
	for _, e := range events {
		f := strings.Fields(e)
		out = append(out, f[0]+" "+f[1])
	}
	return out
}

func conditionMessage(tm *gpuvcv1.Team, typ string) string {
	if c := apimeta.FindStatusCondition(tm.Status.Conditions, typ); c != nil {
		return c.Message
	}
	return ""
}
