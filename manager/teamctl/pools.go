package teamctl

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpuvc/gpuvc/api/contract"
	gpuvcv1 "github.com/gpuvc/gpuvc/api/v1alpha1"
	"github.com/gpuvc/gpuvc/gpu/mig"
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
	var mine []corev1.Node
	for _, n := range all.Items {
		pool := n.Labels[contract.LabelPool]
		pools[pool] = true
		if pool != t.Spec.Pool {
			continue
		}
		mine = append(mine, n)
		for r, q := range n.Status.Allocatable {
			if strings.HasPrefix(string(r), contract.ResourceMIGPrefix) && !q.IsZero() {
				offered[string(r)] = true
			}
		}
	}
	if len(mine) == 0 {
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
	return append(warnings, RuntimeWarnings(t.Spec.Pool, mine)...)
}

// RuntimeWarnings names the nodes of a pool whose GPU container runtime the
// node agent found unsafe (condition GPURuntimeSafe=False: it would give an
// unprivileged container the GPUs it names in NVIDIA_VISIBLE_DEVICES), and
// whether the agent fenced them (its taint: no new pods of the team there) or
// only warns, with the agent's reason and the file and key it names.
func RuntimeWarnings(pool string, nodes []corev1.Node) []string {
	var out []string
	for _, n := range nodes {
		var c *corev1.NodeCondition
		for i := range n.Status.Conditions {
			if n.Status.Conditions[i].Type == contract.ConditionGPURuntimeSafe {
				c = &n.Status.Conditions[i]
			}
		}
		if c == nil || c.Status != corev1.ConditionFalse {
			continue
		}
		why, _, _ := strings.Cut(c.Message, "; ")
		why, _, _ = strings.Cut(why, ". ")
		state := "reported unsafe by the gpuvc agent (warn only: not fenced, the team's pods may still run there)"
		if slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == contract.TaintGPURuntimeUnsafe }) {
			state = fmt.Sprintf("fenced by the gpuvc agent (taint %s: no new pods of the team are placed there)", contract.TaintGPURuntimeUnsafe)
		}
		out = append(out, fmt.Sprintf("node %s of pool %s is %s: its GPU container runtime would give a pod the GPUs it names in NVIDIA_VISIBLE_DEVICES (%s: %s); the platform must fix the node (docs/platform-guide.md)",
			n.Name, pool, state, c.Reason, why))
	}
	return out
}

func list(set map[string]bool) string {
	if len(set) == 0 {
		return "none"
	}
	return strings.Join(slices.Sorted(maps.Keys(set)), ", ")
}
