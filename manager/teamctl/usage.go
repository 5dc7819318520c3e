package teamctl

import (
	"cmp"
	"context"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpuvc/gpuvc/api/contract"
	gpuvcv1 "github.com/gpuvc/gpuvc/api/v1alpha1"
	"github.com/gpuvc/gpuvc/manager/accounting"
)

// Usage is the GPU time teams held in a window, from the manager's accounting
// ledgers (manager/accounting).
type Usage struct {
	// From and To bound the window; From is zero for "since counting started".
	From time.Time `json:"from,omitzero"`
	To   time.Time `json:"to"`
	// Rows are per team, pool and kind, sorted.
	Rows []UsageRow `json:"rows"`
}

// UsageRow is one team's GPU time of one pool and kind.
type UsageRow struct {
	Team       string  `json:"team"`
	Pool       string  `json:"pool"`
	Kind       string  `json:"kind"`
	GPUSeconds float64 `json:"gpuSeconds"`
	GPUHours   float64 `json:"gpuHours"`
	// DataFrom is where the team's data starts: later than From when the manager
	// started counting later or older hours are past retention.
	DataFrom time.Time `json:"dataFrom"`
	// SampledAt is the ledger's last sample: use after it is not counted yet.
	SampledAt time.Time `json:"sampledAt"`
}

// Usage reads every team's ledger and sums its GPU time over the last `since`
// before now; since 0 means everything counted.
func (c *Client) Usage(ctx context.Context, since time.Duration, now time.Time) (*Usage, error) {
	list := &corev1.ConfigMapList{}
	if err := c.c.List(ctx, list, client.MatchingLabels{accounting.LabelLedger: "true"}); err != nil {
		return nil, c.explain(err)
	}
	u := &Usage{To: now, Rows: []UsageRow{}}
	if since > 0 {
		u.From = now.Add(-since)
	}
	for i := range list.Items {
		cm := &list.Items[i]
		team := cm.Labels[contract.LabelTeam]
		// Only the manager's checkpoint: a copy synced from a vCluster has another name.
		if cm.Name != accounting.LedgerConfigMap || team == "" || cm.Namespace != gpuvcv1.HostNamespace(team) {
			continue
		}
		l, err := accounting.DecodeLedger(cm)
		if err != nil {
			return nil, err
		}
		secs, from := l.Totals, l.Since
		if since > 0 {
			secs, from = l.Window(u.From, now)
		}
		for k, v := range secs {
			u.Rows = append(u.Rows, UsageRow{Team: team, Pool: k.Pool, Kind: k.Kind, GPUSeconds: v,
				GPUHours: v / 3600, DataFrom: from.UTC(), SampledAt: l.SampledAt.UTC()})
		}
	}
	slices.SortFunc(u.Rows, func(a, b UsageRow) int {
		return cmp.Or(cmp.Compare(a.Team, b.Team), cmp.Compare(a.Pool, b.Pool), cmp.Compare(a.Kind, b.Kind))
	})
	return u, nil
}
