package team_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/gpuvc/gpuvc/api/teamstatus"
	gpuvcv1 "github.com/gpuvc/gpuvc/api/v1alpha1"
	"github.com/gpuvc/gpuvc/e2e/testsupport/testobj"
)

// promptly bounds the deletion of a team with nothing left to tear down.
const promptly = 30 * time.Second

// TestDeleteWithoutReleaseOrNamespaceIsPrompt: a Team that never got a release
// nor a namespace — stored before the CRD refused its spec or its name, which
// cannot name them — is gone soon after it is deleted.
func TestDeleteWithoutReleaseOrNamespaceIsPrompt(t *testing.T) {
	ctx := integration(t)
	for name, tm := range map[string]*gpuvcv1.Team{
		"invalid spec":    testobj.Team("never", "a100").MIG("1g.7gb", 1).Obj(),
		"name with a dot": testobj.Team("a.b", "a100").GPUs(1).Obj(),
	} {
		t.Run(name, func(t *testing.T) {
			createLegacyTeam(ctx, t, tm)
			heldByTheManager(ctx, t, tm.Name)
			err := c.Get(ctx, ns(gpuvcv1.HostNamespace(tm.Name)), &corev1.Namespace{})
			require.True(t, apierrors.IsNotFound(err), "the team's namespace exists: %v", err)

			require.NoError(t, c.Delete(ctx, tm))
			deletedWithin(ctx, t, tm.Name, promptly)
		})
	}
}

// TestDeletionSaysWhatHoldsTheNamespace: while the team's namespace cannot go,
// the Team's Ready condition names what holds it; once freed, the Team goes.
func TestDeletionSaysWhatHoldsTheNamespace(t *testing.T) {
	ctx := integration(t)
	const hold = "gpuvc.dev/test-hold"
	tm := testobj.Team("held", "a100").MIG("1g.7gb", 1).Obj() // invalid: the manager installs nothing
	createLegacyTeam(ctx, t, tm)
	heldByTheManager(ctx, t, "held")
	// Content with a finalizer nobody removes keeps the namespace terminating.
	require.NoError(t, c.Create(ctx, testobj.Namespace("team-held", nil)))
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "pinned", Namespace: "team-held", Finalizers: []string{hold}}}
	require.NoError(t, c.Create(ctx, cm))
	release := func() {
		orig := cm.DeepCopy()
		cm.Finalizers = nil
		_ = client.IgnoreNotFound(c.Patch(context.Background(), cm, client.MergeFrom(orig)))
	}
	t.Cleanup(release)

	require.NoError(t, c.Delete(ctx, tm))
	got := &gpuvcv1.Team{}
	get(ctx, t, ns("held"), got, func() (bool, string) {
		ready := apimeta.FindStatusCondition(got.Status.Conditions, gpuvcv1.ConditionReady)
		if ready == nil {
			return false, "Ready not reported"
		}
		return ready.Status == metav1.ConditionFalse && ready.Reason == gpuvcv1.ReasonDeleting &&
			strings.Contains(ready.Message, hold), ready.Reason + ": " + ready.Message
	})

	release()
	deletedWithin(ctx, t, "held", promptly)
}

// TestDeleteStatusWriteNeverOverwritesAnother: the idle policy's Asleep
// condition, written from a copy of the Team read before its deletion, and the
// reconciler's Deleting reports, written from its cache, keep each other
// whichever comes first, and neither writer meets a conflict.
func TestDeleteStatusWriteNeverOverwritesAnother(t *testing.T) {
	ctx := integration(t)
	const hold, nsHold = "gpuvc.dev/test-hold", "gpuvc.dev/test-hold-namespace"
	tm := testobj.Team("asleep", "a100").MIG("1g.7gb", 1).Obj() // invalid: the manager installs nothing
	createLegacyTeam(ctx, t, tm)
	heldByTheManager(ctx, t, "asleep")
	// Content with a finalizer keeps the namespace terminating; the namespace's
	// own finalizer, released first, changes what the Deleting message says.
	nsObj := testobj.Namespace("team-asleep", nil)
	nsObj.Finalizers = []string{nsHold}
	require.NoError(t, c.Create(ctx, nsObj))
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "pinned", Namespace: "team-asleep", Finalizers: []string{hold}}}
	require.NoError(t, c.Create(ctx, cm))
	unpin := func(obj client.Object) {
		patch := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`))
		_ = client.IgnoreNotFound(c.Patch(context.Background(), obj, patch))
	}
	t.Cleanup(func() { unpin(cm); unpin(nsObj) })

	stale := &gpuvcv1.Team{}
	require.NoError(t, c.Get(ctx, ns("asleep"), stale))
	asleep := func(msg string) {
		t.Helper()
		want := stale.DeepCopy()
		apimeta.SetStatusCondition(&want.Status.Conditions, metav1.Condition{Type: gpuvcv1.ConditionAsleep,
			Status: metav1.ConditionTrue, Reason: gpuvcv1.ReasonAsleep, Message: msg})
		wrote, err := teamstatus.Idle.Apply(ctx, c, stale, want)
		require.NoError(t, err)
		require.True(t, wrote)
	}
	got := &gpuvcv1.Team{}
	// deleting: Ready says Deleting and names what holds the namespace, and not
	// what was released.
	deleting := func(holds string, released ...string) func() (bool, string) {
		return func() (bool, string) {
			r := apimeta.FindStatusCondition(got.Status.Conditions, gpuvcv1.ConditionReady)
			if r == nil {
				return false, "Ready not reported"
			}
			ok := r.Reason == gpuvcv1.ReasonDeleting && strings.Contains(r.Message, holds)
			for _, s := range released {
				ok = ok && !strings.Contains(r.Message, s)
			}
			return ok, r.Reason + ": " + r.Message
		}
	}
	requireAsleep := func(msg string) {
		t.Helper()
		a := apimeta.FindStatusCondition(got.Status.Conditions, gpuvcv1.ConditionAsleep)
		require.NotNil(t, a, "the idle policy's condition is gone: %+v", got.Status.Conditions)
		require.Equal(t, msg, a.Message)
	}

	// The idle policy writes first; the reconciler's Deleting report keeps it.
	asleep("idle for 1h")
	require.NoError(t, c.Delete(ctx, tm))
	get(ctx, t, ns("asleep"), got, deleting(nsHold))
	requireAsleep("idle for 1h")

	// The idle policy again, from its copy read before the deletion: Deleting stays.
	asleep("idle for 2h")
	require.NoError(t, c.Get(ctx, ns("asleep"), got))
	ok, why := deleting(nsHold)()
	require.True(t, ok, "the reconciler's Ready was written over: %s", why)
	requireAsleep("idle for 2h")

	// The reconciler reports the namespace's finalizer gone; Asleep stays.
	unpin(nsObj)
	get(ctx, t, ns("asleep"), got, deleting(hold, nsHold))
	requireAsleep("idle for 2h")

	unpin(cm)
	deletedWithin(ctx, t, "asleep", promptly)
}

// heldByTheManager waits until the manager has put its finalizer on the Team and
// reported on its host resources: deleting it now goes through the teardown.
func heldByTheManager(ctx context.Context, t *testing.T, name string) {
	t.Helper()
	got := &gpuvcv1.Team{}
	get(ctx, t, ns(name), got, func() (bool, string) {
		c := apimeta.FindStatusCondition(got.Status.Conditions, gpuvcv1.ConditionHostResourcesReady)
		return controllerutil.ContainsFinalizer(got, gpuvcv1.Finalizer) && c != nil, "no finalizer or no HostResourcesReady yet"
	})
}

// deletedWithin polls until the Team is gone, failing with its conditions after d.
func deletedWithin(ctx context.Context, t *testing.T, name string, d time.Duration) {
	t.Helper()
	got := &gpuvcv1.Team{}
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, d, true, func(ctx context.Context) (bool, error) {
		err := c.Get(ctx, ns(name), got)
		return apierrors.IsNotFound(err), nil
	})
	require.NoError(t, err, "team %s still there after %v; conditions: %+v", name, d, got.Status.Conditions)
}
