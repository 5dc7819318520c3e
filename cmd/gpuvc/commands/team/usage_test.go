package team_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/gpuvc/gpuvc/api/scheme"
	"github.com/gpuvc/gpuvc/charts/installer"
	"github.com/gpuvc/gpuvc/manager/accounting"
	"github.com/gpuvc/gpuvc/manager/teamctl"

	"github.com/gpuvc/gpuvc/api/contract"
)

// ledgerNamespace stands for gpuvc's namespace (`team usage -n`): the running
// manager keeps its own ledgers in gpuvc-system and leaves these alone.
const ledgerNamespace = "usage-ledgers"

// storeLedger writes a team's ledger record as the manager would; deletedAt zero
// for a live team.
func storeLedger(ctx context.Context, t *testing.T, team string, uid types.UID, deletedAt time.Time, l *accounting.Ledger) {
	t.Helper()
	c, err := client.New(host.Config, client.Options{Scheme: scheme.New()})
	require.NoError(t, err)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ledgerNamespace}}
	// Kept for the package's later tests: a namespace being deleted refuses new objects.
	if err := c.Create(ctx, ns); err != nil {
		require.True(t, apierrors.IsAlreadyExists(err), "%v", err)
	}
	b, err := json.Marshal(l)
	require.NoError(t, err)
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: ledgerNamespace, Name: accounting.LedgerName(team, uid),
			Labels: map[string]string{accounting.LabelLedger: "true", contract.LabelTeam: team, accounting.LabelTeamUID: string(uid)}},
		Data: map[string]string{accounting.DataKey: string(b)},
	}
	if !deletedAt.IsZero() {
		cm.Annotations = map[string]string{accounting.AnnotationDeletedAt: deletedAt.UTC().Format(time.RFC3339)}
	}
	require.NoError(t, c.Create(ctx, cm))
	t.Cleanup(func() { _ = c.Delete(context.Background(), cm) })
}

func TestUsage(t *testing.T) {
	ctx := integration(t)
	// Two GPUs and a 3g slice for 3 hours, ending 10 minutes ago; then nothing.
	end := time.Now().Add(-10 * time.Minute).Truncate(time.Second)
	l := accounting.NewLedger(end.Add(-3 * time.Hour))
	l.Advance(l.Since, accounting.Rates{{Pool: "a100", Kind: accounting.KindWhole}: 2, {Pool: "a100", Kind: accounting.KindMIG}: 3.0 / 7})
	l.Advance(end, accounting.Rates{})
	// A whole-GPU pod drained for a failed GPU after 45 minutes (node agent).
	l.CreditLost(end.Add(-time.Hour), "a100-0", "a100", 2700)
	storeLedger(ctx, t, "usage-ml", "uid-live", time.Time{}, l)

	rows := func(args ...string) map[string]float64 {
		t.Helper()
		res := gpuvc(t, append([]string{"team", "usage", "-n", ledgerNamespace, "-o", "json"}, args...)...)
		require.Equal(t, 0, res.code, res.errOut)
		var u teamctl.Usage
		require.NoError(t, json.Unmarshal([]byte(res.out), &u), res.out)
		got := map[string]float64{}
		for _, r := range u.Rows {
			if r.Team == "usage-ml" {
				got[r.Pool+"/"+r.Kind] = r.GPUHours
			}
		}
		return got
	}
	all := rows()
	require.InDelta(t, 6.0, all["a100/whole"], 1e-6)
	require.InDelta(t, 9.0/7, all["a100/mig"], 1e-6)
	require.InDelta(t, 0.75, all["a100/lost-to-gpu-failure"], 1e-6)
	// The last hour holds 50 minutes of use.
	recent := rows("--since", "1h")
	require.InDelta(t, 2*50.0/60, recent["a100/whole"], 0.01)

	table := gpuvc(t, "team", "usage", "-n", ledgerNamespace)
	require.Equal(t, 0, table.code, table.errOut)
	require.Contains(t, table.out, "TEAM")
	require.Regexp(t, `usage-ml\s+a100\s+6\.00\s+1\.29\s+0\.00\s+0\.00\s+7\.29\s+0\.75\s+-\n`, table.out)

	csv := gpuvc(t, "team", "usage", "-n", ledgerNamespace, "-o", "csv")
	require.Equal(t, 0, csv.code, csv.errOut)
	require.True(t, strings.HasPrefix(csv.out, "team,pool,kind,gpu_hours,gpu_seconds,data_from,sampled_at,deleted_at\n"), csv.out)
	require.Contains(t, csv.out, "usage-ml,a100,whole,6.0000,21600.0,")
}

// TestUsageListsDeletedTeams: a deleted team's ledger, kept by the manager, is in
// every output, marked deleted with when; a new team of the same name is apart.
func TestUsageListsDeletedTeams(t *testing.T) {
	ctx := integration(t)
	end := time.Now().Add(-2 * time.Hour).Truncate(time.Second)
	old := accounting.NewLedger(end.Add(-4 * time.Hour))
	old.Advance(old.Since, accounting.Rates{{Pool: "h100", Kind: accounting.KindWhole}: 1})
	old.Advance(end, accounting.Rates{})
	deleted := end.Add(time.Minute)
	storeLedger(ctx, t, "usage-gone", "uid-old", deleted, old)
	now := accounting.NewLedger(end.Add(time.Hour))
	now.Advance(now.Since, accounting.Rates{{Pool: "h100", Kind: accounting.KindWhole}: 1})
	now.Advance(end.Add(90*time.Minute), accounting.Rates{})
	storeLedger(ctx, t, "usage-gone", "uid-new", time.Time{}, now)

	structured := func(format string, decode func([]byte, any) error) {
		t.Helper()
		res := gpuvc(t, "team", "usage", "-n", ledgerNamespace, "-o", format)
		require.Equal(t, 0, res.code, res.errOut)
		var u teamctl.Usage
		require.NoError(t, decode([]byte(res.out), &u), res.out)
		var got []teamctl.UsageRow
		for _, r := range u.Rows {
			if r.Team == "usage-gone" {
				got = append(got, r)
			}
		}
		require.Len(t, got, 2, "%s rows of usage-gone: %s", format, res.out)
		require.Equal(t, "uid-new", got[0].TeamUID, "the live team first")
		require.False(t, got[0].Deleted)
		require.True(t, got[0].DeletedAt.IsZero())
		require.InDelta(t, 0.5, got[0].GPUHours, 1e-6)
		require.Equal(t, "uid-old", got[1].TeamUID)
		require.True(t, got[1].Deleted, "%s: the deleted team is not marked", format)
		require.True(t, got[1].DeletedAt.Equal(deleted), "%s: deleted at %v, want %v", format, got[1].DeletedAt, deleted)
		require.InDelta(t, 4.0, got[1].GPUHours, 1e-6)
	}
	structured("json", json.Unmarshal)
	structured("yaml", func(b []byte, v any) error { return yaml.Unmarshal(b, v) })

	table := gpuvc(t, "team", "usage", "-n", ledgerNamespace)
	require.Equal(t, 0, table.code, table.errOut)
	require.Regexp(t, `usage-gone\s+h100\s+0\.50\s+0\.00\s+0\.00\s+0\.00\s+0\.50\s+0\.00\s+-\n`, table.out)
	require.Regexp(t, `usage-gone\s+h100\s+4\.00\s+0\.00\s+0\.00\s+0\.00\s+4\.00\s+0\.00\s+`+deleted.UTC().Format(time.RFC3339)+`\n`, table.out)

	csv := gpuvc(t, "team", "usage", "-n", ledgerNamespace, "-o", "csv")
	require.Equal(t, 0, csv.code, csv.errOut)
	require.Regexp(t, `usage-gone,h100,whole,4\.0000,14400\.0,[^,]+,[^,]+,`+deleted.UTC().Format(time.RFC3339)+`\n`, csv.out)
}

// TestUsageReadsGpuvcNamespaceByDefault: without -n the ledgers are read where
// `gpuvc install` puts gpuvc.
func TestUsageReadsGpuvcNamespaceByDefault(t *testing.T) {
	require.Equal(t, installer.DefaultNamespace, accounting.DefaultNamespace)
}

func TestUsageRefusesANegativeWindow(t *testing.T) {
	res := gpuvcAlone(t, "team", "usage", "--since", "-1h")
	require.NotEqual(t, 0, res.code)
	require.Contains(t, res.errOut, "--since -1h0m0s is negative")
}
