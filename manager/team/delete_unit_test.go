package team_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	gpuvcv1 "github.com/gpuvc/gpuvc/api/v1alpha1"
	"github.com/gpuvc/gpuvc/e2e/testsupport/testobj"
	"github.com/gpuvc/gpuvc/vclusters"
)

// deleting is a Team whose deletion was requested, still held by the finalizer.
func deleting(name string) *gpuvcv1.Team {
	tm := testobj.Team(name, "a100").GPUs(1).Obj()
	tm.Finalizers = []string{gpuvcv1.Finalizer}
	tm.DeletionTimestamp = &metav1.Time{Time: now}
	return tm
}

func requireGone(t *testing.T, u *unit, name string) {
	t.Helper()
	err := u.c.Get(context.Background(), ns(name), &gpuvcv1.Team{})
	require.True(t, apierrors.IsNotFound(err), "team %s: finalizer not released (%v)", name, err)
}

// TestDeleteFinishesWhenNothingWasInstalled: a release that never existed, or
// whose names Apply would have refused (teams named before names were validated),
// counts as uninstalled, and a namespace that never existed lets the Team go.
func TestDeleteFinishesWhenNothingWasInstalled(t *testing.T) {
	for name, tc := range map[string]struct {
		team         string
		uninstallErr error
	}{
		"release and namespace never existed": {team: "ml"},
		"release not found":                   {team: "ml", uninstallErr: fmt.Errorf("%w: team-ml/ml", vclusters.ErrReleaseNotFound)},
		"release name starts with a digit":    {team: "9ml", uninstallErr: fmt.Errorf("%w: Name %q", vclusters.ErrInvalidSpec, "9ml")},
		"namespace name has a dot":            {team: "a.b", uninstallErr: fmt.Errorf("%w: Namespace %q", vclusters.ErrInvalidSpec, "team-a.b")},
	} {
		t.Run(name, func(t *testing.T) {
			vc := readyVClusters()
			vc.uninstallErr = tc.uninstallErr
			u := newUnit(t, vc, []client.Object{deleting(tc.team)})
			result, err := u.reconcile(t, tc.team)
			require.NoError(t, err)
			require.Equal(t, reconcile.Result{}, result)
			requireGone(t, u, tc.team)
			require.Equal(t, []string{"Uninstall team-" + tc.team + "/" + tc.team}, vc.called())
		})
	}
}

// TestDeleteWaitsForTheNamespaceAndSaysWhy: the namespace is deleted, and while
// it goes the Ready condition and an event name what still holds it.
func TestDeleteWaitsForTheNamespaceAndSaysWhy(t *testing.T) {
	nsObj := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-ml"}}
	u := newUnit(t, readyVClusters(), []client.Object{deleting("ml"), nsObj})

	result, err := u.reconcile(t, "ml")
	require.NoError(t, err)
	require.Equal(t, reconcile.Result{RequeueAfter: waitInterval}, result)
	got := u.team(t, "ml")
	requireConditions(t, got, map[string]*cond{gpuvcv1.ConditionReady: isFalse(gpuvcv1.ReasonDeleting)})
	require.Contains(t, conditionMessage(got, gpuvcv1.ConditionReady), "waiting for namespace team-ml")
	require.Equal(t, []string{"Normal Deleting"}, eventKinds(u.drain()))
	err = u.c.Get(context.Background(), ns("team-ml"), &corev1.Namespace{})
	require.True(t, apierrors.IsNotFound(err), "namespace not deleted: %v", err)

	// The namespace is gone: the finalizer goes.
	_, err = u.reconcile(t, "ml")
	require.NoError(t, err)
	requireGone(t, u, "ml")
}

// TestDeleteNamesWhatHoldsTheNamespace: a terminating namespace's remaining
// content and finalizers are in the Ready condition's message; the event is
// emitted when that message changes, not on every pass.
func TestDeleteNamesWhatHoldsTheNamespace(t *testing.T) {
	nsObj := &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{Name: "team-ml", Finalizers: []string{"example.com/hold"}, DeletionTimestamp: &metav1.Time{Time: now}},
		Spec:       corev1.NamespaceSpec{Finalizers: []corev1.FinalizerName{corev1.FinalizerKubernetes}},
		Status: corev1.NamespaceStatus{Phase: corev1.NamespaceTerminating, Conditions: []corev1.NamespaceCondition{
			{Type: corev1.NamespaceContentRemaining, Status: corev1.ConditionTrue, Message: "Some resources are remaining: pods. has 2 resource instances"},
			{Type: corev1.NamespaceDeletionDiscoveryFailure, Status: corev1.ConditionFalse, Message: "All resources successfully discovered"},
		}},
	}
	u := newUnit(t, readyVClusters(), []client.Object{deleting("ml"), nsObj})

	for range 2 {
		result, err := u.reconcile(t, "ml")
		require.NoError(t, err)
		require.Equal(t, reconcile.Result{RequeueAfter: waitInterval}, result)
	}
	msg := conditionMessage(u.team(t, "ml"), gpuvcv1.ConditionReady)
	require.Contains(t, msg, "pods. has 2 resource instances")
	require.Contains(t, msg, "kubernetes")
	require.Contains(t, msg, "example.com/hold")
	require.NotContains(t, msg, "successfully discovered", "conditions that are not True hold nothing")
	require.Equal(t, []string{"Normal Deleting"}, eventKinds(u.drain()), "one event while nothing changes")
}

// TestUninstallFailureIsReportedAndRetried: an uninstall that fails keeps the
// finalizer, says why in the Ready condition and a warning, and is retried.
func TestUninstallFailureIsReportedAndRetried(t *testing.T) {
	vc := readyVClusters()
	vc.uninstallErr = errors.New("helm: connection refused")
	u := newUnit(t, vc, []client.Object{deleting("ml")})

	_, err := u.reconcile(t, "ml")
	require.Error(t, err)
	got := u.team(t, "ml")
	requireConditions(t, got, map[string]*cond{gpuvcv1.ConditionReady: isFalse(gpuvcv1.ReasonUninstallFailed)})
	ready := apimeta.FindStatusCondition(got.Status.Conditions, gpuvcv1.ConditionReady)
	require.Contains(t, ready.Message, "release ml in namespace team-ml")
	require.Contains(t, ready.Message, "connection refused")
	require.Equal(t, []string{"Warning UninstallFailed"}, eventKinds(u.drain()))
	_, err = u.reconcile(t, "ml")
	require.Error(t, err)
	require.Empty(t, u.drain(), "the same failure is not announced again")

	vc.uninstallErr = nil
	_, err = u.reconcile(t, "ml")
	require.NoError(t, err)
	requireGone(t, u, "ml")
}

// writeFirst is an interceptor step: before the reconciler's first write of the
// Team reaches the fake API server, someone else's write does. (Status writes
// are server-side applies of the reconciler's own fields, which the fake cannot
// judge — it treats the conditions list as atomic: delete_test.go's
// TestDeleteStatusWriteNeverOverwritesAnother runs on the real API server.)
func writeFirst(t *testing.T, theirs func(*gpuvcv1.Team), update func(context.Context, client.Client, *gpuvcv1.Team) error) func(context.Context, client.Client) {
	done := false
	return func(ctx context.Context, c client.Client) {
		if done {
			return
		}
		done = true
		cur := &gpuvcv1.Team{}
		require.NoError(t, c.Get(ctx, ns("ml"), cur))
		theirs(cur)
		require.NoError(t, update(ctx, c, cur))
	}
}

// TestDeleteReleasesOnlyItsFinalizer: a finalizer someone else adds between the
// reconciler's read and its release of gpuvc's makes the release conflict (a
// merge patch replaces the whole list); the retry keeps theirs.
func TestDeleteReleasesOnlyItsFinalizer(t *testing.T) {
	theirs := writeFirst(t, func(tm *gpuvcv1.Team) { tm.Finalizers = append(tm.Finalizers, "example.com/backup") },
		func(ctx context.Context, c client.Client, tm *gpuvcv1.Team) error { return c.Update(ctx, tm) })
	u := newUnit(t, readyVClusters(), []client.Object{deleting("ml")}, withInterceptors(interceptor.Funcs{
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			theirs(ctx, c)
			return c.Patch(ctx, obj, patch, opts...)
		},
	}))

	result, err := u.reconcile(t, "ml")
	require.NoError(t, err)
	require.Equal(t, reconcile.Result{RequeueAfter: time.Second}, result, "retried soon")

	_, err = u.reconcile(t, "ml")
	require.NoError(t, err)
	require.Equal(t, []string{"example.com/backup"}, u.team(t, "ml").Finalizers)
}
