// Package claims tells a team why its PersistentVolumeClaim does not bind.
// Kubernetes says it in events on the host claim (Warning ProvisioningFailed:
// storageclass.storage.k8s.io "fast" not found; FailedBinding, a Normal event:
// no persistent volumes available for this claim and no storage class is set),
// which the team cannot see: vCluster v0.36.1 syncs events back for pods,
// services, secrets and configmaps only. It does copy the host claim's whole
// status to the team's claim, so this controller writes the latest such event as the condition
// ConditionType on the host claim's status; `kubectl describe pvc` in the
// team's cluster then shows it under Conditions. The condition goes once the
// claim is no longer Pending.
package claims
