package teamstatus_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpuvc/gpuvc/api/teamstatus"
	gpuvcv1 "github.com/gpuvc/gpuvc/api/v1alpha1"
	"github.com/gpuvc/gpuvc/e2e/testsupport/testobj"
)

// at is the writers' clock: whole seconds, as the API server keeps times.
var at = metav1.NewTime(time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC))

func set(t *gpuvcv1.Team, typ string, status metav1.ConditionStatus, reason string) {
	apimeta.SetStatusCondition(&t.Status.Conditions, metav1.Condition{Type: typ, Status: status, Reason: reason,
		Message: reason + " says so", ObservedGeneration: t.Generation, LastTransitionTime: at})
}

func newTeam(ctx context.Context, t *testing.T, name string) *gpuvcv1.Team {
	t.Helper()
	tm := testobj.Team(name, "a100").GPUs(1).Obj()
	require.NoError(t, c.Create(ctx, tm))
	t.Cleanup(func() { _ = c.Delete(context.Background(), tm) })
	return read(ctx, t, name)
}

func read(ctx context.Context, t *testing.T, name string) *gpuvcv1.Team {
	t.Helper()
	tm := &gpuvcv1.Team{}
	require.NoError(t, c.Get(ctx, client.ObjectKey{Name: name}, tm))
	return tm
}

// conditions is "Type=Status Reason" of each condition of t, by type.
func conditions(t *gpuvcv1.Team) map[string]string {
	out := map[string]string{}
	for _, c := range t.Status.Conditions {
		out[c.Type] = string(c.Status) + " " + c.Reason
	}
	return out
}

// apply writes owner's part of want, read being what the writer read.
func apply(ctx context.Context, t *testing.T, owner teamstatus.Owner, read *gpuvcv1.Team, edit func(*gpuvcv1.Team)) {
	t.Helper()
	want := read.DeepCopy()
	edit(want)
	wrote, err := owner.Apply(ctx, c, read, want)
	require.NoError(t, err, "%s's write", owner.Manager())
	require.True(t, wrote, "%s's change was not written", owner.Manager())
}

var gpuSeconds = &gpuvcv1.GPUSeconds{Since: at, SampledAt: at, Total: 3600,
	ByKind: []gpuvcv1.KindSeconds{{Pool: "a100", Kind: "whole", Seconds: 3600}}}

// TestWritersWithStaleReadsKeepEachOthersFields: the three writers write from
// one read each, made before any of them wrote; none gets a conflict and none
// undoes another's conditions or fields, however stale its copy.
func TestWritersWithStaleReadsKeepEachOthersFields(t *testing.T) {
	ctx := integration(t)
	stale := newTeam(ctx, t, "stale")

	reconciler := teamstatus.Reconciler.Writer(c, stale)
	mine := stale.DeepCopy()
	mine.Status.ObservedGeneration = mine.Generation
	mine.Status.Namespace = "team-stale"
	set(mine, gpuvcv1.ConditionHostResourcesReady, metav1.ConditionTrue, "Provisioned")
	set(mine, gpuvcv1.ConditionReady, metav1.ConditionFalse, "Provisioning")
	wrote, err := reconciler.Write(ctx, mine)
	require.NoError(t, err)
	require.True(t, wrote)

	apply(ctx, t, teamstatus.Idle, stale, func(tm *gpuvcv1.Team) {
		set(tm, gpuvcv1.ConditionAsleep, metav1.ConditionTrue, gpuvcv1.ReasonAsleep)
		tm.Status.Idle = &gpuvcv1.IdleStatus{AsleepSince: &at}
	})
	apply(ctx, t, teamstatus.Accounting, stale, func(tm *gpuvcv1.Team) { tm.Status.GPUSeconds = gpuSeconds })

	// The reconciler again, from its copy that has neither Asleep nor gpuSeconds.
	set(mine, gpuvcv1.ConditionReady, metav1.ConditionTrue, "Ready")
	wrote, err = reconciler.Write(ctx, mine)
	require.NoError(t, err)
	require.True(t, wrote)
	// The idle policy again, from the first read: Ready is not put back.
	apply(ctx, t, teamstatus.Idle, stale, func(tm *gpuvcv1.Team) {
		set(tm, gpuvcv1.ConditionAsleep, metav1.ConditionFalse, gpuvcv1.ReasonAwake)
	})

	got := read(ctx, t, "stale")
	require.Equal(t, map[string]string{
		gpuvcv1.ConditionReady:              "True Ready",
		gpuvcv1.ConditionHostResourcesReady: "True Provisioned",
		gpuvcv1.ConditionAsleep:             "False Awake",
	}, conditions(got))
	require.Equal(t, "team-stale", got.Status.Namespace)
	require.Equal(t, got.Generation, got.Status.ObservedGeneration)
	require.Equal(t, gpuSeconds.Total, got.Status.GPUSeconds.Total)
	require.Nil(t, got.Status.Idle, "status.idle is the idle policy's: its last write had none")

	// Nothing of the reconciler's changed: no write.
	wrote, err = reconciler.Write(ctx, mine)
	require.NoError(t, err)
	require.False(t, wrote)
	wrote, err = teamstatus.Reconciler.Apply(ctx, c, got, got.DeepCopy())
	require.NoError(t, err)
	require.False(t, wrote)
	require.Equal(t, got.ResourceVersion, read(ctx, t, "stale").ResourceVersion)
}

// TestAWriterRemovesOnlyItsOwn: a condition or field a writer no longer applies
// goes; another writer's stays.
func TestAWriterRemovesOnlyItsOwn(t *testing.T) {
	ctx := integration(t)
	tm := newTeam(ctx, t, "remove")
	apply(ctx, t, teamstatus.Reconciler, tm, func(tm *gpuvcv1.Team) {
		set(tm, gpuvcv1.ConditionReady, metav1.ConditionTrue, "Ready")
		set(tm, gpuvcv1.ConditionKubeconfigReady, metav1.ConditionTrue, "Exported")
		tm.Status.Queue = &gpuvcv1.QueueStatus{ClusterQueue: "gpuvc-remove"}
	})
	apply(ctx, t, teamstatus.Idle, tm, func(tm *gpuvcv1.Team) {
		set(tm, gpuvcv1.ConditionAsleep, metav1.ConditionTrue, gpuvcv1.ReasonAsleep)
		tm.Status.Idle = &gpuvcv1.IdleStatus{AsleepSince: &at}
	})
	apply(ctx, t, teamstatus.Accounting, tm, func(tm *gpuvcv1.Team) { tm.Status.GPUSeconds = gpuSeconds })

	// The idle policy clears what it reported.
	apply(ctx, t, teamstatus.Idle, read(ctx, t, "remove"), func(tm *gpuvcv1.Team) {
		apimeta.RemoveStatusCondition(&tm.Status.Conditions, gpuvcv1.ConditionAsleep)
		tm.Status.Idle = nil
	})
	got := read(ctx, t, "remove")
	require.Equal(t, map[string]string{gpuvcv1.ConditionReady: "True Ready", gpuvcv1.ConditionKubeconfigReady: "True Exported"}, conditions(got))
	require.Nil(t, got.Status.Idle)
	require.NotNil(t, got.Status.Queue)
	require.NotNil(t, got.Status.GPUSeconds)

	// The reconciler drops a condition and the queue, from a copy that still has Asleep.
	apply(ctx, t, teamstatus.Reconciler, tm, func(tm *gpuvcv1.Team) {
		set(tm, gpuvcv1.ConditionReady, metav1.ConditionTrue, "Ready")
		set(tm, gpuvcv1.ConditionAsleep, metav1.ConditionTrue, gpuvcv1.ReasonAsleep) // not its own: not applied
		tm.Status.Queue = nil
	})
	got = read(ctx, t, "remove")
	require.Equal(t, map[string]string{gpuvcv1.ConditionReady: "True Ready"}, conditions(got))
	require.Nil(t, got.Status.Queue)
	require.Equal(t, gpuSeconds.Total, got.Status.GPUSeconds.Total)
}

// writeTheOldWay writes a status as the manager did before teamstatus: merge
// patches of the status subresource (Update operations in managedFields), the
// reconciler's and the idle policy's with an optimistic lock, accounting's raw.
func writeTheOldWay(ctx context.Context, t *testing.T, name string) *gpuvcv1.Team {
	t.Helper()
	cur := read(ctx, t, name)
	orig := cur.DeepCopy()
	cur.Status.ObservedGeneration = cur.Generation
	cur.Status.Namespace = "team-" + name
	set(cur, gpuvcv1.ConditionReady, metav1.ConditionFalse, "ControlPlaneStarting")
	set(cur, gpuvcv1.ConditionHostResourcesReady, metav1.ConditionTrue, "Provisioned")
	set(cur, gpuvcv1.ConditionVClusterReady, metav1.ConditionFalse, "ControlPlaneStarting")
	require.NoError(t, c.Status().Patch(ctx, cur, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})))
	orig = cur.DeepCopy()
	set(cur, gpuvcv1.ConditionAsleep, metav1.ConditionTrue, gpuvcv1.ReasonAsleep)
	cur.Status.Idle = &gpuvcv1.IdleStatus{AsleepSince: &at, LastActivity: &at}
	require.NoError(t, c.Status().Patch(ctx, cur, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})))
	patch, err := json.Marshal(map[string]any{"status": map[string]any{"gpuSeconds": gpuSeconds}})
	require.NoError(t, err)
	require.NoError(t, c.Status().Patch(ctx, &gpuvcv1.Team{ObjectMeta: metav1.ObjectMeta{Name: name}}, client.RawPatch(types.MergePatchType, patch)))

	got := read(ctx, t, name)
	require.NotEmpty(t, updateEntries(got), "the old writes are Update operations: %+v", got.ManagedFields)
	return got
}

func updateEntries(t *gpuvcv1.Team) []string {
	var out []string
	for _, e := range t.ManagedFields {
		if e.Operation == metav1.ManagedFieldsOperationUpdate && e.Subresource == "status" {
			out = append(out, e.Manager)
		}
	}
	return out
}

// statusManagers are the field managers of t's status and the operation of each.
func statusManagers(t *gpuvcv1.Team) map[string]metav1.ManagedFieldsOperationType {
	out := map[string]metav1.ManagedFieldsOperationType{}
	for _, e := range t.ManagedFields {
		if e.Subresource == "status" {
			out[e.Manager] = e.Operation
		}
	}
	return out
}

// TestUpgradeFromMergePatchedStatus: a Team whose status the old merge patches
// wrote; the idle policy clears Asleep: it is gone, with status.idle, and every
// other writer's fields stay, now owned by their writers alone.
func TestUpgradeFromMergePatchedStatus(t *testing.T) {
	ctx := integration(t)
	newTeam(ctx, t, "upgrade")
	old := writeTheOldWay(ctx, t, "upgrade")

	apply(ctx, t, teamstatus.Idle, old, func(tm *gpuvcv1.Team) {
		apimeta.RemoveStatusCondition(&tm.Status.Conditions, gpuvcv1.ConditionAsleep)
		tm.Status.Idle = nil
	})
	got := read(ctx, t, "upgrade")
	require.Equal(t, map[string]string{
		gpuvcv1.ConditionReady:              "False ControlPlaneStarting",
		gpuvcv1.ConditionHostResourcesReady: "True Provisioned",
		gpuvcv1.ConditionVClusterReady:      "False ControlPlaneStarting",
	}, conditions(got))
	require.Nil(t, got.Status.Idle)
	require.Equal(t, "team-upgrade", got.Status.Namespace)
	require.Equal(t, gpuSeconds.Total, got.Status.GPUSeconds.Total)
	require.Empty(t, updateEntries(got))
	managers := statusManagers(got)
	for _, o := range []teamstatus.Owner{teamstatus.Reconciler, teamstatus.Accounting} {
		require.Equal(t, metav1.ManagedFieldsOperationApply, managers[o.Manager()], "%s owns its fields: %v", o.Manager(), managers)
	}

	// Each writer now removes its own: the reconciler's VClusterReady goes.
	apply(ctx, t, teamstatus.Reconciler, got, func(tm *gpuvcv1.Team) {
		apimeta.RemoveStatusCondition(&tm.Status.Conditions, gpuvcv1.ConditionVClusterReady)
	})
	require.NotContains(t, conditions(read(ctx, t, "upgrade")), gpuvcv1.ConditionVClusterReady)
}

// TestUpgradeFromAStaleReadWritesOverNothing: the upgrade claims every owner's
// fields with the values the writer read; when the Team was written since, the
// claims do not happen (a newer Ready is kept), the writer's own write still
// does, and its next write upgrades.
func TestUpgradeFromAStaleReadWritesOverNothing(t *testing.T) {
	ctx := integration(t)
	newTeam(ctx, t, "race")
	stale := writeTheOldWay(ctx, t, "race")

	// Someone writes Ready after the idle policy's read (an old manager still running).
	cur := read(ctx, t, "race")
	orig := cur.DeepCopy()
	set(cur, gpuvcv1.ConditionReady, metav1.ConditionTrue, "Ready")
	require.NoError(t, c.Status().Patch(ctx, cur, client.MergeFrom(orig)))

	apply(ctx, t, teamstatus.Idle, stale, func(tm *gpuvcv1.Team) {
		apimeta.RemoveStatusCondition(&tm.Status.Conditions, gpuvcv1.ConditionAsleep)
		tm.Status.Idle = nil
	})
	got := read(ctx, t, "race")
	require.Equal(t, "True Ready", conditions(got)[gpuvcv1.ConditionReady], "the stale Ready was written back")
	require.Equal(t, "True Asleep", conditions(got)[gpuvcv1.ConditionAsleep], "removed while an Update entry co-owns it?")
	require.NotEmpty(t, updateEntries(got), "upgraded from a stale read")

	// The next write, from a fresh read, upgrades and removes Asleep.
	apply(ctx, t, teamstatus.Idle, got, func(tm *gpuvcv1.Team) {
		apimeta.RemoveStatusCondition(&tm.Status.Conditions, gpuvcv1.ConditionAsleep)
		tm.Status.Idle = nil
	})
	got = read(ctx, t, "race")
	require.Equal(t, map[string]string{
		gpuvcv1.ConditionReady:              "True Ready",
		gpuvcv1.ConditionHostResourcesReady: "True Provisioned",
		gpuvcv1.ConditionVClusterReady:      "False ControlPlaneStarting",
	}, conditions(got))
	require.Nil(t, got.Status.Idle)
	require.Empty(t, updateEntries(got))
}

// TestUpgradeAllFromTheAPIServer: the manager's cache strips managedFields, so
// a Writer handed a cached Team never sees the old Update entries; UpgradeAll,
// run at start from the API server, hands them to their owners. A Team written
// the new way only is left alone.
func TestUpgradeAllFromTheAPIServer(t *testing.T) {
	ctx := integration(t)
	newTeam(ctx, t, "old-a")
	newTeam(ctx, t, "old-b")
	fresh := newTeam(ctx, t, "fresh")
	writeTheOldWay(ctx, t, "old-a")
	writeTheOldWay(ctx, t, "old-b")
	apply(ctx, t, teamstatus.Reconciler, fresh, func(tm *gpuvcv1.Team) {
		set(tm, gpuvcv1.ConditionReady, metav1.ConditionFalse, "ControlPlaneStarting")
	})
	freshRV := read(ctx, t, "fresh").ResourceVersion

	n, err := teamstatus.UpgradeAll(ctx, c, c)
	require.NoError(t, err)
	require.Equal(t, 2, n)
	for _, name := range []string{"old-a", "old-b"} {
		got := read(ctx, t, name)
		require.Empty(t, updateEntries(got), "%s keeps Update entries", name)
		require.Equal(t, "True Asleep", conditions(got)[gpuvcv1.ConditionAsleep], "%s lost a field in the upgrade", name)
		require.Equal(t, metav1.ManagedFieldsOperationApply, statusManagers(got)[teamstatus.Idle.Manager()])
	}
	require.Equal(t, freshRV, read(ctx, t, "fresh").ResourceVersion, "a Team with nothing to upgrade was written")

	n, err = teamstatus.UpgradeAll(ctx, c, c)
	require.NoError(t, err)
	require.Zero(t, n, "a second run found something to upgrade")
}
