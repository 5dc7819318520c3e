package kindnode

import (
	"path/filepath"

	"github.com/gpuvc/gpuvc/kind/localcluster"
	"github.com/gpuvc/gpuvc/kind/localcluster/images"
)

// nodeLayerRef names the single-layer image the node's own files are built as
// (cached by content like every image); the node image stacks its layer on the
// Debian root file system.
const nodeLayerRef = "gpuvc.local/kind-node-layer:" + localcluster.KubernetesVersion

// maskedUnits make no sense in a container and only slow the boot down or fail.
var maskedUnits = []string{"getty.target", "console-getty.service", "systemd-modules-load.service", "systemd-firstboot.service"}

// nodeLayer is what the node adds to Debian: the binaries, systemd units,
// containerd's and the kubelet's configuration, what kind reads (/kind/version,
// /kind/manifests) and the archives of the images imported at boot.
func nodeLayer(in inputs, archives []string) (images.Spec, error) {
	cfg, err := containerdConfig(images.PauseRef)
	if err != nil {
		return images.Spec{}, err
	}
	exe := images.Executable
	files := []images.File{
		{Source: in.kubeadm, Path: "/usr/bin/kubeadm", Mode: exe},
		{Source: in.node.Kubelet, Path: "/usr/bin/kubelet", Mode: exe},
		{Source: in.cp.Kubectl, Path: "/usr/bin/kubectl", Mode: exe},
		{Source: in.node.Containerd, Path: "/usr/local/bin/containerd", Mode: exe},
		{Source: in.node.ContainerdShim, Path: "/usr/local/bin/containerd-shim-runc-v2", Mode: exe},
		{Source: in.node.Ctr, Path: "/usr/local/bin/ctr", Mode: exe},
		{Content: []byte(entrypoint), Path: "/usr/local/bin/entrypoint", Mode: exe},
		{Content: []byte(containerdShim), Path: "/usr/local/sbin/containerd", Mode: exe},
		{Content: []byte(containerdUnit), Path: "/etc/systemd/system/containerd.service"},
		{Content: []byte(imagesUnit), Path: "/etc/systemd/system/gpuvc-images.service"},
		{Content: []byte(kubeletUnit), Path: "/etc/systemd/system/kubelet.service"},
		{Content: cfg, Path: "/etc/containerd/config.toml"},
		{Content: []byte(registryHosts), Path: "/etc/containerd/certs.d/_default/hosts.toml"},
		{Content: []byte(kubeletDropIn), Path: kubeletDropIns + "/50-gpuvc-kind-node.conf"},
		{Content: []byte(localcluster.KubernetesVersion), Path: "/kind/version"},
		{Content: []byte(defaultCNIManifest()), Path: "/kind/manifests/default-cni.yaml"},
	}
	for _, a := range archives {
		files = append(files, images.File{Source: a, Path: filepath.Join(imagesDir, filepath.Base(a))})
	}
	var links []images.Symlink
	for _, u := range []string{"containerd.service", "gpuvc-images.service", "kubelet.service"} {
		links = append(links, images.Symlink{Path: "/etc/systemd/system/multi-user.target.wants/" + u, Target: "/etc/systemd/system/" + u})
	}
	links = append(links, images.Symlink{Path: "/etc/systemd/system/default.target", Target: "/lib/systemd/system/multi-user.target"})
	for _, u := range maskedUnits {
		links = append(links, images.Symlink{Path: "/etc/systemd/system/" + u, Target: "/dev/null"})
	}
	return images.Spec{
		Ref:      nodeLayerRef,
		Files:    files,
		Symlinks: links,
		Dirs: []images.Dir{
			{Path: cniConfDir}, {Path: "/opt/cni/bin"}, {Path: "/etc/kubernetes/manifests"}, {Path: "/var/lib/kubelet"},
		},
	}, nil
}
