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
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

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
