package localnode

import (
	"context"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/gpuvc/gpuvc/kind/localcluster"
)

// kubeletConfig is the kubelet's configuration: cgroupfs under the node's cgroup
// root (cgroup v1 allowed), containerd's CRI socket, client certificates of the
// cluster CA and webhook authorization (the API server's kubelet client is a
// cluster admin), no swap check, eviction thresholds and image GC relaxed so a
// busy development disk never evicts test pods or deletes imported images.
func (n *Node) kubeletConfig(port, healthzPort int) ([]byte, error) {
	cfg := kubeletv1beta1.KubeletConfiguration{
		TypeMeta: metav1.TypeMeta{APIVersion: "kubelet.config.k8s.io/v1beta1", Kind: "KubeletConfiguration"},
		Address:  NodeIP.String(),
		Port:     int32(port),
		// The read-only port is off; health probes use the healthz endpoint.
		ReadOnlyPort:       0,
		HealthzBindAddress: "127.0.0.1",
		HealthzPort:        ptr.To(int32(healthzPort)),
		Authentication: kubeletv1beta1.KubeletAuthentication{
			X509:      kubeletv1beta1.KubeletX509Authentication{ClientCAFile: n.path("pki", "ca.crt")},
			Webhook:   kubeletv1beta1.KubeletWebhookAuthentication{Enabled: ptr.To(true)},
			Anonymous: kubeletv1beta1.KubeletAnonymousAuthentication{Enabled: ptr.To(false)},
		},
		Authorization:            kubeletv1beta1.KubeletAuthorization{Mode: kubeletv1beta1.KubeletAuthorizationModeWebhook},
		ContainerRuntimeEndpoint: "unix://" + n.containerdSocket(),
		CgroupDriver:             "cgroupfs",
		CgroupRoot:               cgroupRoot,
		CgroupsPerQOS:            ptr.To(true),
		FailCgroupV1:             ptr.To(false),
		FailSwapOn:               ptr.To(false),
		// The host's resolvers are not for pods: they get their own loopback, where
		// nothing answers on port 53, so a query fails at once and never leaves the
		// pod. (An empty file would do for most pods, but CoreDNS refuses to start
		// when its upstream list is empty: vCluster runs one per team.) Cluster DNS,
		// if any, comes from ClusterDNS.
		ResolverConfig:              ptr.To(n.path("resolv.conf")),
		ClusterDomain:               "cluster.local",
		ClusterDNS:                  n.opts.ClusterDNS,
		PodLogsDir:                  n.path("pod-logs"),
		VolumePluginDir:             n.path("volume-plugins"),
		RegisterWithTaints:          n.opts.Taints,
		SerializeImagePulls:         ptr.To(true),
		ImageGCHighThresholdPercent: ptr.To(int32(100)),
		ImageGCLowThresholdPercent:  ptr.To(int32(99)),
		EvictionHard: map[string]string{
			"memory.available":  "1Mi",
			"nodefs.available":  "1%",
			"nodefs.inodesFree": "1%",
			"imagefs.available": "1%",
		},
		RotateCertificates: false,
		ServerTLSBootstrap: false,
		// The kubelet changes a few kernel defaults (restored by Release) but must
		// not refuse to start because they differ.
		ProtectKernelDefaults: false,
		MaxPods:               110,
		// Status changes (device-plugin resources, ...) reach the API within 2s
		// instead of 10s; unchanged status is still reported only every 5 min.
		NodeStatusUpdateFrequency: metav1.Duration{Duration: 2 * time.Second},
	}
	return yaml.Marshal(cfg)
}

// startKubelet writes the kubelet's credentials and configuration and starts it.
// Its root folder is under the node's; the device-plugin folder is fixed
// (/var/lib/kubelet/device-plugins) whatever the root folder.
func (n *Node) startKubelet(context.Context) error {
	n.kubeletStarted = time.Now()
	if err := writeFile(n.path("pki", "ca.crt"), n.cp.PKI.CACert()); err != nil {
		return err
	}
	if err := writeFile(n.path("resolv.conf"), []byte("nameserver 127.0.0.1\n")); err != nil {
		return err
	}
	kubeconfig := n.path("kubelet.kubeconfig")
	if err := n.cp.WriteKubeconfig(kubeconfig, "system:node:"+n.Name, "system:nodes"); err != nil {
		return err
	}
	ports, err := localcluster.FreePorts(2)
	if err != nil {
		return err
	}
	cfg, err := n.kubeletConfig(ports[0], ports[1])
	if err != nil {
		return err
	}
	if err := writeFile(n.path("kubelet.yaml"), cfg); err != nil {
		return err
	}
	args := []string{
		"--config=" + n.path("kubelet.yaml"),
		"--kubeconfig=" + kubeconfig,
		"--root-dir=" + n.path("kubelet"),
		"--cert-dir=" + n.path("kubelet-pki"),
		"--hostname-override=" + n.Name,
		"--node-ip=" + NodeIP.String(),
		"--v=1",
	}
	return n.start("kubelet", n.bins.Kubelet, args, nil)
}
