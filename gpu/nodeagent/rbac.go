package nodeagent

import rbacv1 "k8s.io/api/rbac/v1"

// RBACRules are the agent's ClusterRole rules: get and patch of nodes for the
// publication (and the runtime check's taint); with health watching (health !=
// "") or the runtime check (runtime != "") also the Node conditions
// (nodes/status) and events; with HealthCordonDrain also listing pods and
// evicting them. The chart's ClusterRole must agree.
func RBACRules(health HealthPolicy, runtime RuntimePolicy) []rbacv1.PolicyRule {
	rules := []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"get", "patch"}}}
	if health == "" && runtime == "" {
		return rules
	}
	rules = append(rules,
		rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"nodes/status"}, Verbs: []string{"patch"}},
		rbacv1.PolicyRule{APIGroups: []string{"events.k8s.io"}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}})
	if health == HealthCordonDrain {
		rules = append(rules,
			rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"list"}},
			rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"pods/eviction"}, Verbs: []string{"create"}})
	}
	return rules
}
