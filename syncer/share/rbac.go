package share

import rbacv1 "k8s.io/api/rbac/v1"

// RBACRules are the cluster-wide permissions the share controller needs (bind
// them to the manager's identity, which must also be one of the webhook's
// TrustedUsers so it may write gpuvc.dev/ metadata and remove the gate).
func RBACRules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		// Share pods: read, record assignments, pin, ungate. Reservation pods:
		// create and delete.
		{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}},
		// Share ConfigMaps (the pods' GPU environment).
		{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "create", "update"}},
		// Team namespaces, node labels (GPU memory, simulated), quota changes.
		{APIGroups: []string{""}, Resources: []string{"namespaces", "nodes", "resourcequotas"}, Verbs: []string{"get", "list", "watch"}},
		// Events on share pods.
		{APIGroups: []string{"events.k8s.io"}, Resources: []string{"events"}, Verbs: []string{"create", "patch", "update"}},
	}
}
