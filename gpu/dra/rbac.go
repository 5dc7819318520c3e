package dra

import rbacv1 "k8s.io/api/rbac/v1"

// RBACRules are what Serve's client needs: the node's ResourceSlices (the
// resourceslice controller lists, watches and writes them), the Node (the
// slices' owner) and the claims it prepares.
func RBACRules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		{APIGroups: []string{"resource.k8s.io"}, Resources: []string{"resourceslices"}, Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}},
		{APIGroups: []string{"resource.k8s.io"}, Resources: []string{"resourceclaims"}, Verbs: []string{"get"}},
		{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"get"}},
	}
}
