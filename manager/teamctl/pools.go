package teamctl

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpuvc/gpuvc/gpu/mig"
	"github.com/gpuvc/gpuvc/manager/api/contract"
	gpuvcv1 "github.com/gpuvc/gpuvc/manager/api/v1alpha1"
)

// PoolWarnings says what in a Team's pool cannot serve its quota today: no node
// carries the pool, or no node of the pool offers a MIG profile the quota names.
// These are warnings, not refusals: nodes may join later. A caller that may not
// list nodes gets no warnings.
func (c *Client) PoolWarnings(ctx context.Context, t *gpuvcv1.Team) []string {
	all := &corev1.NodeList{}
	if err := c.c.List(ctx, all, client.HasLabels{contract.LabelPool}); err != nil {
		return nil
	}
	pools := map[string]bool{}
	offered := map[string]bool{}
	nodes := 0
	for _, n := range all.Items {
		pool := n.Labels[contract.LabelPool]
		pools[pool] = true
		if pool != t.Spec.Pool {
			continue
		}
		nodes++
		for r, q := range n.Status.Allocatable {
			if strings.HasPrefix(string(r), contract.ResourceMIGPrefix) && !q.IsZero() {
				offered[string(r)] = true
			}
		}
	}
	if nodes == 0 {
		return []string{fmt.Sprintf("no node carries %s=%s (pools on this cluster: %s); the team's pods that need the pool stay Pending until such nodes join",
			contract.LabelPool, t.Spec.Pool, list(pools))}
	}
	var warnings []string
	for _, p := range slices.Sorted(maps.Keys(t.Spec.Quota.MIG)) {
		if t.Spec.Quota.MIG[p] > 0 && !offered[mig.ResourceName(p)] {
			warnings = append(warnings, fmt.Sprintf("no node of pool %s offers MIG profile %s (%s); MIG pods asking for it stay Pending (MIG profiles offered there: %s)",
				t.Spec.Pool, p, mig.ResourceName(p), list(offered)))
		}
	}
	return warnings
}

func list(set map[string]bool) string {
	if len(set) == 0 {
		return "none"
	}
	return strings.Join(slices.Sorted(maps.Keys(set)), ", ")
}
