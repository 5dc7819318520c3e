// Package localaddons runs the host cluster's add-ons that make a team's cluster
// work like a cluster, beside the local control plane and on its real node:
//
//   - storage: rancher's local-path-provisioner (the provisioner kind ships)
//     with a default StorageClass "standard", so a team's PersistentVolumeClaims
//     (synced to the host by vCluster) bind to a directory on the real node;
//   - cluster DNS: CoreDNS in kube-system (pods k8s-app=kube-dns) behind the
//     Service kube-dns at DNSServiceIP, which the real node's kubelet gives
//     every ClusterFirst pod, as kubeadm and kind do;
//   - metrics: metrics-server in kube-system behind the aggregated Metrics API
//     (v1beta1.metrics.k8s.io), which vCluster's metrics proxy forwards a team's
//     `kubectl top` to.
//
// The provisioner runs as a host process against the admin kubeconfig, as
// kube-router and Kueue do; its short-lived helper pods (mkdir and rm of a
// volume's directory) run on the real node from the busybox workload image.
// CoreDNS and metrics-server run as pods from images assembled in Go, because a
// team's vCluster reaches them as it would on any cluster: by Service name,
// through the team's NetworkPolicies, which select pods. docs/realnode.md
// ("Storage, DNS and metrics") says more.
package localaddons
