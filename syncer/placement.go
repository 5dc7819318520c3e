package syncer

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"

	"github.com/gpuvc/gpuvc/api/contract"
)

// The pool fence. The nodeSelector gpuvc.dev/pool=<pool> plus the pool's
// toleration keep a pod in its pool: every other pool is tainted, and node
// selectors and required affinities are ANDed, so nothing a tenant adds can widen
// the set of nodes. Tolerations that would reach other pools are removed (they are
// the only thing that could, together with a foreign scheduler, matter), and
// spec.nodeName — which bypasses the scheduler and its taint checks — is refused
// unless it names a node of the pool. Required node affinities that can match no
// node of the pool are refused too: the pod could never run, and the tenant gets
// a reason instead of a pod pending forever.

// poolToleration is the toleration every pod of the pool gets.
func poolToleration(pool string) corev1.Toleration {
	return corev1.Toleration{Key: contract.LabelPool, Operator: corev1.TolerationOpEqual, Value: pool, Effect: corev1.TaintEffectNoSchedule}
}

// toleratesPool reports whether t is (or covers exactly) the pool's toleration.
func toleratesPool(t corev1.Toleration, pool string) bool {
	return t.Key == contract.LabelPool && (t.Operator == corev1.TolerationOpEqual || t.Operator == "") && t.Value == pool &&
		(t.Effect == corev1.TaintEffectNoSchedule || t.Effect == "")
}

// MaxNodeProblemTolerationSeconds bounds how long a pod may stay on a node
// that is not ready or unreachable: the Kubernetes default that the API
// server's DefaultTolerationSeconds plugin (and vCluster's, in the virtual
// cluster) writes into every pod.
const MaxNodeProblemTolerationSeconds = 300

// nodeProblemTaints are the taints Kubernetes itself puts on a node that is
// not ready or unreachable; a pod may tolerate them (NoExecute) for a bounded
// time.
var nodeProblemTaints = []string{corev1.TaintNodeNotReady, corev1.TaintNodeUnreachable}

// tolerationAllowed reports whether a pod of pool may carry t: the pool's own
// toleration, Kubernetes' not-ready/unreachable NoExecute tolerations for at
// most MaxNodeProblemTolerationSeconds, or a toleration the team allows
// (TeamPolicy.AllowedTolerations, compared by key, operator, value and
// effect; never a gpuvc.dev/ key but the pool). Everything else — wildcards, other pools, gpuvc's own taints (GPU
// health, runtime), node.kubernetes.io/unschedulable and any other key — is
// not: tolerating it would put the pod on a node the platform keeps pods off.
func tolerationAllowed(t corev1.Toleration, pool string, allowed []corev1.Toleration) bool {
	switch {
	case t.Key == contract.LabelPool:
		return toleratesPool(t, pool)
	case strings.HasPrefix(t.Key, contract.ReservedPrefix):
		// gpuvc's own taints (GPU health, unsafe runtime): never, whatever the
		// team's list says.
		return false
	case slices.Contains(nodeProblemTaints, t.Key):
		if t.Effect == corev1.TaintEffectNoExecute && t.TolerationSeconds != nil &&
			*t.TolerationSeconds >= 0 && *t.TolerationSeconds <= MaxNodeProblemTolerationSeconds &&
			(t.Operator == corev1.TolerationOpExists || t.Value == "") {
			return true
		}
	}
	return slices.ContainsFunc(allowed, func(a corev1.Toleration) bool { return sameToleration(a, t) })
}

// sameToleration compares key, operator (empty is Equal), value and effect;
// tolerationSeconds only bounds how long and is not compared.
func sameToleration(a, b corev1.Toleration) bool {
	op := func(o corev1.TolerationOperator) corev1.TolerationOperator {
		if o == "" {
			return corev1.TolerationOpEqual
		}
		return o
	}
	return a.Key == b.Key && op(a.Operator) == op(b.Operator) && a.Value == b.Value && a.Effect == b.Effect
}

// ToleratedKey is how a toleration is written in the team's allowed list and
// the CEL fence's parameters: key|operator|value|effect (operator Equal when
// empty).
func ToleratedKey(t corev1.Toleration) string {
	op := t.Operator
	if op == "" {
		op = corev1.TolerationOpEqual
	}
	return t.Key + "|" + string(op) + "|" + t.Value + "|" + string(t.Effect)
}

// tolerationsRemovedMessage names the field, the tolerations removed, the
// limit and the fix.
func tolerationsRemovedMessage(field string, removed []string, pool string) string {
	return fmt.Sprintf(
		"removed %s [%s]: they would let the pod onto nodes the platform keeps pods off (other pools, cordoned nodes, nodes with a failing GPU or an unsafe runtime) "+
			"(limit: the pool toleration %s=%s:NoSchedule, %s and %s NoExecute for at most %d s, and the tolerations the team's spec.placement.allowedTolerations lists); "+
			"remove them, or ask the platform team to allow them for the team",
		field, strings.Join(removed, ", "), contract.LabelPool, pool, corev1.TaintNodeNotReady, corev1.TaintNodeUnreachable, MaxNodeProblemTolerationSeconds)
}

func describeToleration(t corev1.Toleration) string {
	key := t.Key
	if key == "" {
		key = "*"
	}
	op := string(t.Operator)
	if op == "" {
		op = string(corev1.TolerationOpEqual)
	}
	s := key + " " + op
	if t.Value != "" {
		s += " " + t.Value
	}
	if t.Effect != "" {
		s += ":" + string(t.Effect)
	}
	if t.TolerationSeconds != nil {
		s += fmt.Sprintf(" for %d s", *t.TolerationSeconds)
	}
	return s
}

// mutatePoolFence sets the pool's nodeSelector and toleration and removes
// tolerations that reach other pools.
func mutatePoolFence(in *Input) []Note {
	pod, pool := in.Pod, in.pool()
	var notes []Note
	var added []string
	switch old, ok := pod.Spec.NodeSelector[contract.LabelPool]; {
	case !ok:
		added = append(added, fmt.Sprintf("nodeSelector %s=%s", contract.LabelPool, pool))
	case old != pool:
		notes = append(notes, Note{Warning, ReasonPoolSelectorReplaced, fmt.Sprintf(
			"spec.nodeSelector[%s]=%s replaced by %s: pods of team %s run in pool %s only", contract.LabelPool, old, pool, in.Policy.Team, pool)})
	}
	if pod.Spec.NodeSelector == nil {
		pod.Spec.NodeSelector = map[string]string{}
	}
	pod.Spec.NodeSelector[contract.LabelPool] = pool

	var kept []corev1.Toleration
	var removed []string
	for _, t := range pod.Spec.Tolerations {
		if !tolerationAllowed(t, pool, in.Policy.AllowedTolerations) {
			removed = append(removed, describeToleration(t))
			continue
		}
		kept = append(kept, t)
	}
	if len(removed) > 0 {
		notes = append(notes, Note{Warning, ReasonTolerationRemoved, tolerationsRemovedMessage("spec.tolerations", removed, pool)})
	}
	if !slices.ContainsFunc(kept, func(t corev1.Toleration) bool { return toleratesPool(t, pool) }) {
		kept = append(kept, poolToleration(pool))
		added = append(added, "toleration "+describeToleration(poolToleration(pool)))
	}
	pod.Spec.Tolerations = kept
	if len(added) > 0 {
		notes = append([]Note{{Normal, ReasonPoolPinned, fmt.Sprintf("pinned to node pool %s: added %s", pool, strings.Join(added, " and "))}}, notes...)
	}
	return notes
}

// checkNodeName refuses spec.nodeName outside the pool: a pod with nodeName skips
// the scheduler, so neither taints nor the nodeSelector would stop it.
func checkNodeName(in *Input) (string, string, bool) {
	node := in.Pod.Spec.NodeName
	if node == "" || (in.Old != nil && in.Old.Spec.NodeName == node) {
		return "", "", false
	}
	pool, known := in.NodePools[node]
	if known && pool == in.pool() {
		return "", "", false
	}
	where := "which gpuvc cannot look up"
	switch {
	case known && pool == "":
		where = "which does not exist or belongs to no pool"
	case known:
		where = "in pool " + pool
	}
	return ReasonNodeNameOutsidePool, fmt.Sprintf(
		"spec.nodeName=%s names a node %s, outside pool %s of team %s (limit: nodes of pool %s); remove spec.nodeName and let the scheduler place the pod",
		node, where, in.pool(), in.Policy.Team, in.pool()), true
}

// checkNodeAffinity refuses a required node affinity none of whose terms can
// match a node of the pool.
func checkNodeAffinity(in *Input) (string, string, bool) {
	a := in.Pod.Spec.Affinity
	if a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return "", "", false
	}
	if in.Old != nil && equalRequiredAffinity(in.Old, in.Pod) {
		return "", "", false
	}
	terms := a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	for _, t := range terms {
		if termReachesPool(t, in.pool(), in.NodePools) {
			return "", "", false
		}
	}
	if len(terms) == 0 {
		return "", "", false
	}
	return ReasonAffinityOutsidePool, fmt.Sprintf(
		"spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution (%s) matches no node of pool %s, the only pool of team %s (limit: nodes of pool %s); remove that node affinity, gpuvc places the pod in pool %s itself",
		describeTerm(terms[0]), in.pool(), in.Policy.Team, in.pool(), in.pool()), true
}

func equalRequiredAffinity(a, b *corev1.Pod) bool {
	get := func(p *corev1.Pod) *corev1.NodeSelector {
		if p.Spec.Affinity == nil || p.Spec.Affinity.NodeAffinity == nil {
			return nil
		}
		return p.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution
	}
	return equality.Semantic.DeepEqual(get(a), get(b))
}

// termReachesPool reports whether a node selector term can match a node of pool,
// judging only the pool label and node names gpuvc knows.
func termReachesPool(t corev1.NodeSelectorTerm, pool string, nodes map[string]string) bool {
	for _, r := range t.MatchExpressions {
		if r.Key != contract.LabelPool {
			continue
		}
		ok := false
		switch r.Operator {
		case corev1.NodeSelectorOpIn:
			ok = slices.Contains(r.Values, pool)
		case corev1.NodeSelectorOpNotIn:
			ok = !slices.Contains(r.Values, pool)
		case corev1.NodeSelectorOpExists:
			ok = true
		}
		if !ok {
			return false
		}
	}
	for _, r := range t.MatchFields {
		if r.Key != "metadata.name" || r.Operator != corev1.NodeSelectorOpIn {
			continue
		}
		if !slices.ContainsFunc(r.Values, func(n string) bool { p, ok := nodes[n]; return ok && p == pool }) {
			return false
		}
	}
	return true
}

func describeTerm(t corev1.NodeSelectorTerm) string {
	var parts []string
	for _, r := range t.MatchExpressions {
		parts = append(parts, fmt.Sprintf("%s %s %v", r.Key, r.Operator, r.Values))
	}
	for _, r := range t.MatchFields {
		parts = append(parts, fmt.Sprintf("%s %s %v", r.Key, r.Operator, r.Values))
	}
	return strings.Join(parts, ", ")
}

// referencedNodes lists the nodes a pod names, for the handler to resolve.
func referencedNodes(pod *corev1.Pod) []string {
	var names []string
	if pod.Spec.NodeName != "" {
		names = append(names, pod.Spec.NodeName)
	}
	if a := pod.Spec.Affinity; a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		for _, t := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
			for _, r := range t.MatchFields {
				if r.Key == "metadata.name" && r.Operator == corev1.NodeSelectorOpIn {
					names = append(names, r.Values...)
				}
			}
		}
	}
	slices.Sort(names)
	return slices.Compact(names)
}
