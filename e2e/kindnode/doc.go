// Package kindnode builds kind's node image offline (test support: the e2e
// suite's kind backend and CI; users' kind pulls its own kindest/node). Nothing is
// pulled: the root file system is Debian's (systemd, runc, CNI plugins, iptables)
// made with mmdebstrap; Kubernetes, containerd and kubeadm are the binaries the
// project builds from Go modules (e2e/localcp); the images kubeadm runs
// (kube-apiserver, kube-controller-manager, kube-scheduler, etcd, kube-proxy,
// CoreDNS, pause) are built in Go like the real node's (kind/localcluster/images)
// and imported into the node's containerd at boot. The node carries what kind
// expects of its image — /kind/version, /kind/manifests/default-cni.yaml, an
// entrypoint booting systemd, containerd at /run/containerd/containerd.sock, a
// kubelet unit kubeadm configures — and adapts to this project's machines:
// cgroup v1 (the kubelet's failCgroupV1 off through its drop-in folder) and no
// CAP_SYS_RESOURCE (containerd's restrict_oom_score_adj).
package kindnode
