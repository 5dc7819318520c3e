// Package localaddons runs the host cluster's add-ons that make a team's cluster
// work like a cluster, beside the local control plane and its real node:
//
//   - storage: rancher's local-path-provisioner (the provisioner kind ships)
//     with a default StorageClass "standard", so a team's PersistentVolumeClaims
//     (synced to the host by vCluster) bind to a directory on the real node;
//   - metrics: metrics-server behind the aggregated Metrics API
//     (v1beta1.metrics.k8s.io), which vCluster's metrics proxy forwards a team's
//     `kubectl top` to.
//
// Both run as host processes against the admin kubeconfig, as kube-router and
// Kueue do: built from their Go modules by the builder (make binaries), no
// image to assemble. The provisioner's short-lived helper pods (mkdir and rm of
// a volume's directory) run on the real node from the busybox workload image.
// docs/realnode.md ("Storage and metrics") says why host processes.
package localaddons
