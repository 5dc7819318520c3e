// Package team reconciles Team objects into host resources: the team's namespace,
// quota and limits, network policy, RBAC, its vCluster release and kubeconfig.
//
// Reconcile is a list of small idempotent steps applied with server-side apply, so a
// hand-deleted or edited object is put back on the next pass; deletion goes through a
// finalizer that uninstalls the release and removes the namespace with everything in it.
package team
