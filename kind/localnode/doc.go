// Package localnode runs a real worker node next to the local control plane of
// package localcluster: kubelet, containerd with runc, a bridge CNI network, kube-proxy
// and optionally kube-router's NetworkPolicy controller, all as host processes,
// plus simulated GPUs served to the kubelet through the device-plugin API.
//
// Pods on it are real containers made from images imported from docker-archive
// tarballs (there is no registry), reach the API server through the `kubernetes`
// Service and each other through the bridge, and `kubectl logs/exec` work.
//
// A test package starts the control plane with the node IP, then nodes:
//
//	cp, _ := localcluster.Start(ctx, localcluster.Options{NodeIP: localnode.NodeIP, Pools: []nodepool.Pool{}})
//	m, _ := localcluster.LoadManifest()
//	bins, _ := m.Node()
//	n, _ := localnode.Start(ctx, cp, bins, localnode.Options{Images: tars, PauseImage: images.PauseRef})
//	defer n.Stop()
//
// The kubelet and containerd use a few fixed host paths (the device-plugin folder,
// /var/log/containers, shim sockets, ...), a fixed cgroup root and a fixed bridge,
// so only one node runs per machine: a Host holds an exclusive lock on
// /run/gpuvc-localnode.lock for its lifetime. Everything a node or host creates is
// recorded in /run/gpuvc-localnode/state.json before it is created, so a later
// Acquire removes what a crashed run left. Without Options.Host, Start acquires
// the host and Stop releases it (bridge included); Acquire one to keep the bridge
// across nodes or to create it before the control plane. It needs root, the
// cgroupfs driver (tested on cgroup v1) and the Debian packages runc, iptables,
// ipset and containernetworking-plugins.
//
// Networking stays on this machine: pods get addresses on the bridge, host traffic
// to service addresses is routed onto the bridge, packets from pods to any
// address outside the pod and service ranges are dropped, and containerd's
// registry configuration points every image pull at a closed loopback port.
package localnode
