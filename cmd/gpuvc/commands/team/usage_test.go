package team_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpuvc/gpuvc/api/scheme"
	gpuvcv1 "github.com/gpuvc/gpuvc/api/v1alpha1"
	"github.com/gpuvc/gpuvc/manager/accounting"
	"github.com/gpuvc/gpuvc/manager/teamctl"

	"github.com/gpuvc/gpuvc/api/contract"
)

// storeLedger writes a team's accounting checkpoint as the manager would, in a
// namespace with no Team, so the running manager leaves it alone.
func storeLedger(ctx context.Context, t *testing.T, team string, l *accounting.Ledger) {
	t.Helper()
	c, err := client.New(host.Config, client.Options{Scheme: scheme.New()})
	require.NoError(t, err)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: gpuvcv1.HostNamespace(team)}}
	require.NoError(t, c.Create(ctx, ns))
	t.Cleanup(func() { _ = c.Delete(context.Background(), ns) })
	b, err := json.Marshal(l)
	require.NoError(t, err)
	require.NoError(t, c.Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: accounting.LedgerConfigMap,
			Labels: map[string]string{accounting.LabelLedger: "true", contract.LabelTeam: team}},
		Data: map[string]string{accounting.DataKey: string(b)},
	}))
}

func TestUsage(t *testing.T) {
	ctx := integration(t)
	// Two GPUs and a 3g slice for 3 hours, ending 10 minutes ago; then nothing.
	end := time.Now().Add(-10 * time.Minute).Truncate(time.Second)
	l := accounting.NewLedger(end.Add(-3 * time.Hour))
	l.Advance(l.Since, accounting.Rates{{Pool: "a100", Kind: accounting.KindWhole}: 2, {Pool: "a100", Kind: accounting.KindMIG}: 3.0 / 7})
	l.Advance(end, accounting.Rates{})
	storeLedger(ctx, t, "usage-ml", l)

	rows := func(args ...string) map[string]float64 {
		t.Helper()
		res := gpuvc(t, append([]string{"team", "usage", "-o", "json"}, args...)...)
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
	// The last hour holds 50 minutes of use.
	recent := rows("--since", "1h")
	require.InDelta(t, 2*50.0/60, recent["a100/whole"], 0.01)

	table := gpuvc(t, "team", "usage")
	require.Equal(t, 0, table.code, table.errOut)
	require.Contains(t, table.out, "TEAM")
	require.Regexp(t, `usage-ml\s+a100\s+6\.00\s+1\.29\s+0\.00\s+0\.00\s+7\.29`, table.out)

	csv := gpuvc(t, "team", "usage", "-o", "csv")
	require.Equal(t, 0, csv.code, csv.errOut)
	require.True(t, strings.HasPrefix(csv.out, "team,pool,kind,gpu_hours,gpu_seconds,data_from,sampled_at\n"), csv.out)
	require.Contains(t, csv.out, "usage-ml,a100,whole,6.0000,21600.0,")
}

func TestUsageRefusesANegativeWindow(t *testing.T) {
	res := gpuvcAlone(t, "team", "usage", "--since", "-1h")
	require.NotEqual(t, 0, res.code)
	require.Contains(t, res.errOut, "--since -1h0m0s is negative")
}
