package teamctl

import (
	"cmp"
	"context"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpuvc/gpuvc/manager/accounting"
)

// Usage is the GPU time teams held in a window, from the manager's accounting
// ledgers (manager/accounting), deleted teams' included while they are kept.
type Usage struct {
	// From and To bound the window; From is zero for "since counting started".
	From time.Time `json:"from,omitzero"`
	To   time.Time `json:"to"`
	// Rows are per team, pool and kind, sorted; a deleted team's after a live one
	// of the same name.
	Rows []UsageRow `json:"rows"`
}

// UsageRow is one team's GPU time of one pool and kind.
type UsageRow struct {
	Team string `json:"team"`
	// TeamUID tells apart a deleted team from a new one of the same name.
	TeamUID string `json:"teamUID"`
	// Deleted: the Team is gone; DeletedAt is when the manager saw it gone. The
	// ledger is kept for the manager's --accounting-deleted-team-retention.
	Deleted    bool      `json:"deleted"`
	DeletedAt  time.Time `json:"deletedAt,omitzero"`
	Pool       string    `json:"pool"`
	Kind       string    `json:"kind"`
	GPUSeconds float64   `json:"gpuSeconds"`
	GPUHours   float64   `json:"gpuHours"`
	// DataFrom is where the team's data starts: later than From when the manager
	// started counting later or older hours are past retention.
	DataFrom time.Time `json:"dataFrom"`
	// SampledAt is the ledger's last sample: use after it is not counted yet.
	SampledAt time.Time `json:"sampledAt"`
}

// Usage reads every team's ledger in namespace, gpuvc's (where the manager keeps
// them), and sums its GPU time over the last `since` before now; since 0 means
// everything counted.
func (c *Client) Usage(ctx context.Context, namespace string, since time.Duration, now time.Time) (*Usage, error) {
	list := &corev1.ConfigMapList{}
	if err := c.c.List(ctx, list, client.InNamespace(namespace), client.MatchingLabels{accounting.LabelLedger: "true"}); err != nil {
		return nil, c.explain(err)
	}
	u := &Usage{To: now, Rows: []UsageRow{}}
	if since > 0 {
		u.From = now.Add(-since)
	}
	for i := range list.Items {
		cm := &list.Items[i]
		if !accounting.IsLedger(cm, namespace) {
			continue
		}
		r, err := accounting.DecodeRecord(cm)
		if err != nil {
			return nil, err
		}
		l := r.Ledger
		secs, from := l.Totals, l.Since
		if since > 0 {
			secs, from = l.Window(u.From, now)
		}
		for k, v := range secs {
			u.Rows = append(u.Rows, UsageRow{Team: r.Team, TeamUID: string(r.UID), Deleted: !r.DeletedAt.IsZero(),
				DeletedAt: r.DeletedAt.UTC(), Pool: k.Pool, Kind: k.Kind, GPUSeconds: v,
				GPUHours: v / 3600, DataFrom: from.UTC(), SampledAt: l.SampledAt.UTC()})
		}
	}
	slices.SortFunc(u.Rows, func(a, b UsageRow) int {
		return cmp.Or(cmp.Compare(a.Team, b.Team), compareDeleted(a, b), cmp.Compare(a.TeamUID, b.TeamUID),
			cmp.Compare(a.Pool, b.Pool), cmp.Compare(a.Kind, b.Kind))
	})
	return u, nil
}

// compareDeleted puts a live team first, then deleted ones, latest deletion first.
func compareDeleted(a, b UsageRow) int {
	if a.Deleted != b.Deleted {
		if a.Deleted {
			return 1
		}
		return -1
	}
	return b.DeletedAt.Compare(a.DeletedAt)
}
