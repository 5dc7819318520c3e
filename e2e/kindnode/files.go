package kindnode

import (
	"bytes"

	"github.com/BurntSushi/toml"
)

// Paths in the node that kind or kubeadm rely on.
const (
	containerdSocket = "/run/containerd/containerd.sock"
	imagesDir        = "/kind/images" // archives imported at boot by gpuvc-images.service
	kubeletDropIns   = "/etc/kubernetes/kubelet.conf.d"
	cniConfDir       = "/etc/cni/net.d"
	debianRunc       = "/usr/sbin/runc"
)

// entrypoint prepares the container and hands over to systemd. kind waits for
// "detected cgroup v1" (or systemd reaching multi-user) in the container log
// before it runs anything in the node.
const entrypoint = `#!/bin/bash
# gpuvc's kind node: prepare the container, then boot systemd (the argument).
set -euo pipefail
# kind waits at most 30 s for this line (on cgroup v1) before it execs into the
# node: first, so a loaded machine does not miss it. The rest is done long before
# kind runs kubeadm.
if [ ! -f /sys/fs/cgroup/cgroup.controllers ]; then
  echo "detected cgroup v1"
fi
# The kubelet mounts volumes with propagation; a shared root lets them through.
mount --make-rshared /
# Pods on other nodes are reached through this node's routes.
sysctl -qw net.ipv4.ip_forward=1 || echo "cannot enable ip_forward" >&2
# Docker's embedded DNS (127.0.0.11, in /etc/resolv.conf) answers only in this
# container's own network namespace: for pods it would be their own loopback
# (CoreDNS would forward to itself and stop on its loop check). It is made to
# answer on the node's address too, which then replaces it in resolv.conf, so
# the node, host-network pods and CoreDNS's upstream all resolve node names.
ip4=$(ip -4 -o addr show dev eth0 | awk '{split($4, a, "/"); print a[1]; exit}')
nat=$(iptables-save -t nat)
for proto in udp tcp; do
  port=$(printf '%s\n' "$nat" | sed -n "s/^-A DOCKER_OUTPUT .*-p $proto .*--to-destination 127.0.0.11:\([0-9]*\).*/\1/p" | head -n1)
  if [ -n "$ip4" ] && [ -n "$port" ]; then
    iptables -t nat -A PREROUTING -d "$ip4" -p "$proto" --dport 53 -j DNAT --to-destination "127.0.0.11:$port"
    iptables -t nat -A OUTPUT -d "$ip4" -p "$proto" --dport 53 -j DNAT --to-destination "127.0.0.11:$port"
  fi
done
if [ -n "$ip4" ] && grep -q '^nameserver 127.0.0.11' /etc/resolv.conf; then
  sysctl -qw net.ipv4.conf.all.route_localnet=1
  sed "s/^nameserver 127.0.0.11/nameserver $ip4/" /etc/resolv.conf > /tmp/resolv.conf
  cat /tmp/resolv.conf > /etc/resolv.conf
fi
exec "$@"
`

// containerdShim answers kind's `containerd config dump` (kind v0.31 reads the
// snapshotter from it before loading an image and knows config versions 2 and 3)
// with containerd 2.4's dump relabelled version 3: version 4 keeps the field kind
// reads where version 3 had it. It sits first on PATH; everything else goes to
// containerd unchanged.
const containerdShim = `#!/bin/sh
if [ "$1" = config ] && [ "$2" = dump ]; then
  shift 2
  /usr/local/bin/containerd config dump "$@" | sed 's/^version = 4$/version = 3/'
  exit
fi
exec /usr/local/bin/containerd "$@"
`

// containerdUnit runs containerd; Type=notify: it tells systemd when it serves.
const containerdUnit = `[Unit]
Description=containerd (gpuvc kind node)
After=network.target local-fs.target

[Service]
Type=notify
ExecStartPre=-/sbin/modprobe overlay
ExecStart=/usr/local/bin/containerd
Restart=always
RestartSec=1
Delegate=yes
KillMode=process
LimitNOFILE=infinity
TasksMax=infinity

[Install]
WantedBy=multi-user.target
`

// imagesUnit imports the images kubeadm runs before the kubelet starts (nothing
// can be pulled, so they ship in the node image as archives) and gives the tools
// image kube-proxy's name too.
var imagesUnit = `[Unit]
Description=Import the preloaded images into containerd (gpuvc kind node)
After=containerd.service
Requires=containerd.service
Before=kubelet.service

[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=/bin/sh -c 'for a in ` + imagesDir + `/*.tar; do /usr/local/bin/ctr -n k8s.io images import --label io.cri-containerd.pinned=pinned "$a" || exit 1; done'
ExecStart=/usr/local/bin/ctr -n k8s.io images tag --force ` + toolsRef + ` ` + kubeProxyRef + `

[Install]
WantedBy=multi-user.target
`

// kubeletUnit runs the kubelet as kubeadm configures it (flags in
// kubeadm-flags.env, config in /var/lib/kubelet), with this node's drop-ins.
// It restarts until kubeadm has written its configuration.
const kubeletUnit = `[Unit]
Description=kubelet (gpuvc kind node)
After=containerd.service gpuvc-images.service
Wants=containerd.service gpuvc-images.service
StartLimitIntervalSec=0

[Service]
EnvironmentFile=-/var/lib/kubelet/kubeadm-flags.env
# kind's kubelet configuration puts pods under cgroupRoot /kubelet, which the
# kubelet wants to exist in every cgroup v1 hierarchy before it starts.
ExecStartPre=/bin/sh -c 'for h in /sys/fs/cgroup/*/; do [ -e "$h/cgroup.procs" ] && mkdir -p "$h/kubelet.slice"; done; true'
ExecStart=/usr/bin/kubelet --bootstrap-kubeconfig=/etc/kubernetes/bootstrap-kubelet.conf --kubeconfig=/etc/kubernetes/kubelet.conf --config=/var/lib/kubelet/config.yaml --config-dir=` + kubeletDropIns + ` $KUBELET_KUBEADM_ARGS
Restart=always
RestartSec=1
KillMode=process
CPUAccounting=true
MemoryAccounting=true

[Install]
WantedBy=multi-user.target
`

// kubeletDropIn: Kubernetes 1.35+ refuses cgroup v1 unless told otherwise, and
// this project's machines have only cgroup v1. On cgroup v2 it changes nothing.
const kubeletDropIn = `apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
failCgroupV1: false
`

// containerdConfig is containerd's configuration (version 3) at its usual paths,
// as kind's kubeadm configuration expects (criSocket, systemd cgroup driver),
// with Debian's runc and CNI plugins, the sandbox image pinned to the preloaded
// pause image, and pulls sent to a closed port so a missing image fails at once.
func containerdConfig(pauseRef string) ([]byte, error) {
	cfg := map[string]any{
		"version": 3,
		"grpc":    map[string]any{"address": containerdSocket},
		"plugins": map[string]any{
			"io.containerd.cri.v1.runtime": map[string]any{
				// The node lacks CAP_SYS_RESOURCE on this project's machines:
				// without this every sandbox fails.
				"restrict_oom_score_adj": true,
				"containerd": map[string]any{
					"default_runtime_name": "runc",
					"runtimes": map[string]any{
						"runc": map[string]any{
							"runtime_type": "io.containerd.runc.v2",
							"options":      map[string]any{"BinaryName": debianRunc, "SystemdCgroup": true},
						},
					},
				},
				"cni": map[string]any{
					"bin_dirs":     []string{"/usr/lib/cni", "/opt/cni/bin"},
					"conf_dir":     cniConfDir,
					"max_conf_num": 1,
				},
			},
			"io.containerd.cri.v1.images": map[string]any{
				"snapshotter":   "overlayfs",
				"pinned_images": map[string]any{"sandbox": pauseRef},
				"registry":      map[string]any{"config_path": "/etc/containerd/certs.d"},
			},
			"io.containerd.nri.v1.nri": map[string]any{"disable": true},
		},
	}
	var buf bytes.Buffer
	err := toml.NewEncoder(&buf).Encode(cfg)
	return buf.Bytes(), err
}

// registryHosts sends every pull to a closed loopback port.
const registryHosts = `server = "http://127.0.0.1:1"
`
