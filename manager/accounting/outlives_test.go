package accounting_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpuvc/gpuvc/api/contract"
	"github.com/gpuvc/gpuvc/api/scheme"
	gpuvcv1 "github.com/gpuvc/gpuvc/api/v1alpha1"
	"github.com/gpuvc/gpuvc/e2e/testsupport/managertest"
	"github.com/gpuvc/gpuvc/e2e/testsupport/testobj"
	"github.com/gpuvc/gpuvc/manager/accounting"
	"github.com/gpuvc/gpuvc/manager/teamctl"
)

// record reads the ledger record of one Team object; nil when there is none.
func record(ctx context.Context, team string, uid types.UID) (*accounting.Record, error) {
	cm := &corev1.ConfigMap{}
	err := c.Get(ctx, client.ObjectKey{Namespace: accounting.DefaultNamespace, Name: accounting.LedgerName(team, uid)}, cm)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return accounting.DecodeRecord(cm)
}

// stepUntil steps clk one interval at a time, each only once the accountant
// waits (its sample at clk's time is written), until ok holds after a sample.
func stepUntil(ctx context.Context, t *testing.T, clk *clocktesting.FakeClock, what string, ok func(ctx context.Context) (bool, error)) {
	t.Helper()
	var last error
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		if !clk.HasWaiters() {
			return false, nil // sampling
		}
		done, err := ok(ctx)
		if err != nil {
			last = err
			return false, nil
		}
		if !done {
			clk.Step(interval)
		}
		return done, nil
	})
	require.NoError(t, err, "%s (last error: %v)", what, last)
}

// afterSample waits for the sample at clk's current time.
func afterSample(ctx context.Context, t *testing.T, clk *clocktesting.FakeClock) {
	t.Helper()
	require.NoError(t, wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true,
		func(context.Context) (bool, error) { return clk.HasWaiters(), nil }))
}

func teamUID(ctx context.Context, t *testing.T, name string) types.UID {
	t.Helper()
	tm := &gpuvcv1.Team{}
	require.NoError(t, c.Get(ctx, client.ObjectKey{Name: name}, tm))
	return tm.UID
}

// TestLedgerOutlivesTheTeam: a team holds a GPU for a fake hour and is deleted;
// its ledger stays in gpuvc's namespace with every GPU-second, marked with when
// the team went, `gpuvc team usage` lists it as deleted, and it goes once the
// retention has passed.
func TestLedgerOutlivesTheTeam(t *testing.T) {
	ctx := integration(t)
	const retention = 24 * time.Hour
	clk := clocktesting.NewFakeClock(time.Now().Add(-48 * time.Hour).Truncate(time.Hour).Add(5 * time.Minute))
	mgr, err := managertest.StartWith(ctx, host, managertest.Options{Accounting: accounting.Options{
		Clock: clk, Interval: interval, StatusInterval: interval, DeletedRetention: retention}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = mgr.Stop() })

	createTeam(ctx, t, testobj.Team("outlive", "a100").GPUs(1).Obj())
	uid := teamUID(ctx, t, "outlive")
	createPod(ctx, t, testobj.Pod("train", "team-outlive").GPUs("1").Obj())
	waitHolding(ctx, t, "team-outlive", 1)
	whole := key("a100", accounting.KindWhole)
	sampled(ctx, t, clk, sameRates(map[string]accounting.Rates{"outlive": {whole: 1}}), "outlive")
	clk.Step(time.Hour)
	held := at(ctx, t, clk, "outlive")["outlive"]
	require.GreaterOrEqual(t, held.Totals[whole], 3600.0)

	// The Team goes, its namespace and pods with it.
	require.NoError(t, c.Delete(ctx, &gpuvcv1.Team{ObjectMeta: metav1.ObjectMeta{Name: "outlive"}}))
	require.NoError(t, wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		err := c.Get(ctx, client.ObjectKey{Name: "outlive"}, &gpuvcv1.Team{})
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	}), "the Team is not deleted")
	goneBy := clk.Now()
	var rec *accounting.Record
	stepUntil(ctx, t, clk, "the ledger is marked deleted", func(ctx context.Context) (bool, error) {
		var err error
		rec, err = record(ctx, "outlive", uid)
		return rec != nil && !rec.DeletedAt.IsZero(), err
	})
	require.False(t, rec.DeletedAt.Before(goneBy), "deleted at %v, before the Team went (%v)", rec.DeletedAt, goneBy)
	require.GreaterOrEqual(t, rec.Ledger.Totals[whole], held.Totals[whole], "GPU-seconds lost with the team")
	require.LessOrEqual(t, rec.Ledger.Totals[whole], held.Totals[whole]+(rec.DeletedAt.Sub(goneBy)+interval).Seconds()+1e-6,
		"counted on after the team went")

	// `gpuvc team usage` (teamctl) lists it, as deleted, with when.
	tc, err := teamctl.New(host.Config)
	require.NoError(t, err)
	u, err := tc.Usage(ctx, accounting.DefaultNamespace, 0, time.Now())
	require.NoError(t, err)
	var rows []teamctl.UsageRow
	for _, r := range u.Rows {
		if r.TeamUID == string(uid) {
			rows = append(rows, r)
		}
	}
	require.Len(t, rows, 1, "usage rows of the deleted team: %+v", u.Rows)
	require.True(t, rows[0].Deleted)
	require.True(t, rows[0].DeletedAt.Equal(rec.DeletedAt), "deletedAt %v, want %v", rows[0].DeletedAt, rec.DeletedAt)
	require.InDelta(t, rec.Ledger.Totals[whole], rows[0].GPUSeconds, 1e-6)

	// Kept for the retention, gone after it.
	clk.Step(retention - time.Hour)
	afterSample(ctx, t, clk)
	rec, err = record(ctx, "outlive", uid)
	require.NoError(t, err)
	require.NotNil(t, rec, "the ledger went before its retention")
	clk.Step(time.Hour)
	afterSample(ctx, t, clk)
	rec, err = record(ctx, "outlive", uid)
	require.NoError(t, err)
	require.Nil(t, rec, "the ledger stayed past its retention")
}

// TestTenantCannotWriteTheLedger attacks a team's ledger as the team: as every
// ServiceAccount of its host namespace (the vCluster's syncer, through which
// whatever a member does inside the vCluster reaches the host) and as its member
// on the host. Each may write ConfigMaps where the ledger used to be, none may
// create, update, patch or delete it where it is now.
func TestTenantCannotWriteTheLedger(t *testing.T) {
	ctx := integration(t)
	clk := clocktesting.NewFakeClock(time.Now())
	mgr := run(ctx, t, clk)
	t.Cleanup(func() { _ = mgr.Stop() })
	createTeam(ctx, t, testobj.Team("mallory", "a100").GPUs(1).Member("User", "mallory").Obj())
	uid := teamUID(ctx, t, "mallory")
	stepUntil(ctx, t, clk, "the team's ledger is written", func(ctx context.Context) (bool, error) {
		rec, err := record(ctx, "mallory", uid)
		return rec != nil, err
	})
	name := accounting.LedgerName("mallory", uid)
	before := &corev1.ConfigMap{}
	require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: accounting.DefaultNamespace, Name: name}, before))

	// The vCluster's syncer identity exists once Helm installed the release; it
	// may write ConfigMaps in the team's namespace (the old place).
	teamNS := gpuvcv1.HostNamespace("mallory")
	var identities []client.Client
	require.NoError(t, wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		sas := &corev1.ServiceAccountList{}
		if err := c.List(ctx, sas, client.InNamespace(teamNS)); err != nil {
			return false, err
		}
		identities = identities[:0]
		writer := false
		for _, sa := range sas.Items {
			as := impersonate(t, "system:serviceaccount:"+teamNS+":"+sa.Name, "system:serviceaccounts", "system:serviceaccounts:"+teamNS)
			identities = append(identities, as)
			probe := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: teamNS, GenerateName: "probe-"}}
			if as.Create(ctx, probe, client.DryRunAll) == nil {
				writer = true
			}
		}
		return writer, nil
	}), "no ServiceAccount of %s may write ConfigMaps there: the vCluster's Role is not installed", teamNS)
	identities = append(identities, impersonate(t, "mallory", "system:authenticated"))

	for i, as := range identities {
		forged := before.DeepCopy()
		forged.Data[accounting.DataKey] = `{"since":"2026-01-01T00:00:00Z","sampledAt":"2026-01-01T00:00:00Z"}`
		err := as.Update(ctx, forged)
		require.True(t, apierrors.IsForbidden(err), "identity %d updated the ledger: %v", i, err)
		err = as.Patch(ctx, before.DeepCopy(), client.RawPatch(types.MergePatchType, []byte(`{"data":{"ledger.json":"{}"}}`)))
		require.True(t, apierrors.IsForbidden(err), "identity %d patched the ledger: %v", i, err)
		err = as.Delete(ctx, before.DeepCopy())
		require.True(t, apierrors.IsForbidden(err), "identity %d deleted the ledger: %v", i, err)
		err = as.DeleteAllOf(ctx, &corev1.ConfigMap{}, client.InNamespace(accounting.DefaultNamespace))
		require.True(t, apierrors.IsForbidden(err), "identity %d deleted the ledgers: %v", i, err)
		// A ledger for a team name of its choice (a record of a team that never was).
		fake := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: accounting.DefaultNamespace,
			Name: accounting.LedgerName("ghost", "0000"), Labels: map[string]string{accounting.LabelLedger: "true",
				contract.LabelTeam: "ghost", accounting.LabelTeamUID: "0000"}}, Data: forged.Data}
		err = as.Create(ctx, fake)
		require.True(t, apierrors.IsForbidden(err), "identity %d created a ledger: %v", i, err)
	}
	after := &corev1.ConfigMap{}
	require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: accounting.DefaultNamespace, Name: name}, after))
	require.Equal(t, before.ResourceVersion, after.ResourceVersion, "the ledger changed under the attack")
}

// TestLegacyLedgersMoveOnStart: ledgers an older gpuvc kept in team namespaces
// are moved into gpuvc's namespace when the manager starts, every GPU-second
// kept: one of a Team that exists (it counts on from there), one whose Team is
// gone (kept as a deleted team's). A ConfigMap that only looks like one (another
// team's label) stays where it is.
func TestLegacyLedgersMoveOnStart(t *testing.T) {
	ctx := integration(t)
	start := time.Now().Add(-24 * time.Hour).Truncate(time.Hour)
	legacy := func(namespace, team string, gpus float64) *corev1.ConfigMap {
		l := accounting.NewLedger(start)
		l.Advance(start, accounting.Rates{key("a100", accounting.KindWhole): gpus})
		l.Advance(start.Add(3*time.Hour), accounting.Rates{})
		b, err := json.Marshal(l)
		require.NoError(t, err)
		require.NoError(t, c.Create(ctx, testobj.Namespace(namespace, nil)))
		t.Cleanup(func() {
			_ = c.Delete(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}})
		})
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: accounting.LegacyConfigMap,
			Labels: map[string]string{accounting.LabelLedger: "true", contract.LabelTeam: team}},
			Data: map[string]string{accounting.DataKey: string(b)}}
		require.NoError(t, c.Create(ctx, cm))
		return cm
	}
	// Before any manager of this version runs: the Team and its namespace, as an
	// older gpuvc left them, and a namespace whose Team is gone.
	createTeam(ctx, t, testobj.Team("upgraded", "a100").GPUs(2).Obj())
	uid := teamUID(ctx, t, "upgraded")
	kept := legacy("team-upgraded", "upgraded", 2)
	orphan := legacy("team-departed", "departed", 1)
	lookalike := legacy("team-lookalike", "someone-else", 5)

	clk := clocktesting.NewFakeClock(start.Add(4 * time.Hour))
	mgr := run(ctx, t, clk)
	t.Cleanup(func() { _ = mgr.Stop() })
	afterSample(ctx, t, clk)
	movedAt := clk.Now()

	whole := key("a100", accounting.KindWhole)
	rec, err := record(ctx, "upgraded", uid)
	require.NoError(t, err)
	require.NotNil(t, rec, "the ledger of team upgraded was not moved")
	require.True(t, rec.DeletedAt.IsZero())
	require.True(t, rec.Ledger.Since.Equal(start), "since %v, want %v: counting started afresh", rec.Ledger.Since, start)
	require.InDelta(t, 2*3*3600.0, rec.Ledger.Totals[whole], 1e-6)
	require.True(t, rec.Ledger.SampledAt.Equal(movedAt), "the moved ledger is not the one counting on: sampled at %v", rec.Ledger.SampledAt)

	recs := &corev1.ConfigMapList{}
	require.NoError(t, c.List(ctx, recs, client.InNamespace(accounting.DefaultNamespace), client.MatchingLabels{contract.LabelTeam: "departed"}))
	require.Len(t, recs.Items, 1, "records of team departed")
	departed, err := accounting.DecodeRecord(&recs.Items[0])
	require.NoError(t, err)
	require.True(t, departed.DeletedAt.Equal(movedAt), "departed: deleted at %v, want %v (when it was moved)", departed.DeletedAt, movedAt)
	require.InDelta(t, 3*3600.0, departed.Ledger.Totals[whole], 1e-6)

	for _, cm := range []*corev1.ConfigMap{kept, orphan} {
		err := c.Get(ctx, client.ObjectKeyFromObject(cm), &corev1.ConfigMap{})
		require.True(t, apierrors.IsNotFound(err), "legacy ledger %s/%s left behind: %v", cm.Namespace, cm.Name, err)
	}
	require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(lookalike), &corev1.ConfigMap{}), "a ConfigMap of another team's label was moved")
	require.NoError(t, c.List(ctx, recs, client.InNamespace(accounting.DefaultNamespace), client.MatchingLabels{contract.LabelTeam: "someone-else"}))
	require.Empty(t, recs.Items, "a lookalike became a record")
}

// impersonate is a client acting as user in groups (the API server checks the
// impersonated identity's RBAC, as for that identity's own token).
func impersonate(t *testing.T, user string, groups ...string) client.Client {
	t.Helper()
	cfg := rest.CopyConfig(host.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: groups}
	as, err := client.New(cfg, client.Options{Scheme: scheme.New()})
	require.NoError(t, err)
	return as
}
