// Package complement writes the complement of a union of label selectors as a
// few label selectors: the pods that none of a team's NetworkPolicies selects,
// to which gpuvc's same-namespace allowance then applies (manager/team).
//
// NetworkPolicies add up: a pod is open to whatever any policy selecting it
// admits. A platform-wide allowance that selects every pod would therefore undo
// every narrowing a team writes. Kubernetes has no "baseline" policy a namespace
// policy overrides (AdminNetworkPolicy's baseline is not served by most policy
// controllers, kube-router included), so gpuvc selects, for its allowance, only
// the pods no team policy selects.
//
// The complement of one selector (a conjunction of requirements) is the union
// of its negated requirements: k In [v] ↔ k NotIn [v] (NotIn also matches pods
// without k), Exists ↔ DoesNotExist. The complement of a union of selectors is
// the intersection of their complements, a product of unions, expanded into a
// union of conjunctions and simplified (contradictions dropped, values on one
// key merged, a conjunction implied by another dropped). Where every selector
// pins one key to one value each (vCluster pins vcluster.loft.sh/namespace and
// vcluster.loft.sh/managed-by), splitting on that key first keeps the result
// linear in the number of values instead of a product; Of returns whichever of
// the two forms is shorter.
package complement
