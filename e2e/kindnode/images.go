package kindnode

import (
	"fmt"
	"path/filepath"

	"github.com/gpuvc/gpuvc/kind/localcluster"
	"github.com/gpuvc/gpuvc/kind/localcluster/images"
)

// The images kubeadm v1.36 runs (`kubeadm config images list`), under the names
// it asks for, and the node's own tools image (kube-proxy's image as well).
const (
	registry      = "registry.k8s.io/"
	etcdTag       = "3.6.8-0"
	corednsTag    = "v1.14.2"
	toolsRef      = "gpuvc.local/kind-node-tools:" + localcluster.KubernetesVersion
	kubeProxyRef  = registry + "kube-proxy:" + localcluster.KubernetesVersion
	hostXtables   = "/usr/sbin/xtables-nft-multi"
	hostIPSet     = "/usr/sbin/ipset"
	hostXtablesSO = "/usr/lib/x86_64-linux-gnu/xtables"
)

// inputs are the prebuilt binaries the node and its images carry.
type inputs struct {
	cp      *localcluster.Binaries
	node    *localcluster.NodeBinaries
	img     *localcluster.ImageBinaries
	kubeadm string
	pause   string
}

// binaryImage is an image holding one dynamically linked binary on PATH (kubeadm's
// static Pods name their command without a directory) with its libraries.
func binaryImage(ref, src, name string) images.Spec {
	p := "/usr/local/bin/" + name
	return images.Spec{
		Ref:         ref,
		Files:       []images.File{{Source: src, Path: p, Mode: images.Executable}},
		LibrariesOf: []string{src},
		Entrypoint:  []string{p},
		Env:         []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"},
	}
}

// toolsImage is the image of kube-proxy, the CNI DaemonSet and the NetworkPolicy
// DaemonSet: kube-proxy, kubectl and kube-router, the host's nft-backed iptables
// (with its extension modules) and ipset, and busybox for the shell, ip and the
// rest.
func toolsImage(in inputs) (images.Spec, error) {
	s := binaryImage(toolsRef, in.node.KubeProxy, "kube-proxy")
	s.Files = append(s.Files, images.File{Source: in.cp.Kubectl, Path: "/usr/local/bin/kubectl", Mode: images.Executable},
		images.File{Source: in.node.KubeRouter, Path: "/usr/local/bin/kube-router", Mode: images.Executable},
		images.File{Source: hostXtables, Path: hostXtables, Mode: images.Executable},
		images.File{Source: hostIPSet, Path: hostIPSet, Mode: images.Executable},
		images.File{Source: images.HostBusybox, Path: "/bin/busybox", Mode: images.Executable})
	s.LibrariesOf = append(s.LibrariesOf, in.cp.Kubectl, hostXtables, hostIPSet)
	mods, err := filepath.Glob(filepath.Join(hostXtablesSO, "*.so"))
	if err != nil || len(mods) == 0 {
		return s, fmt.Errorf("no iptables extensions in %s: install iptables (apt-get install iptables)", hostXtablesSO)
	}
	for _, m := range mods {
		s.Files = append(s.Files, images.File{Source: m, Path: m, Mode: 0o644})
		s.LibrariesOf = append(s.LibrariesOf, m)
	}
	for _, t := range []string{"iptables", "iptables-save", "iptables-restore", "ip6tables", "ip6tables-save", "ip6tables-restore",
		"iptables-nft", "iptables-nft-save", "iptables-nft-restore", "ip6tables-nft", "ip6tables-nft-save", "ip6tables-nft-restore"} {
		s.Symlinks = append(s.Symlinks, images.Symlink{Path: "/usr/sbin/" + t, Target: "xtables-nft-multi"})
	}
	for _, a := range []string{"sh", "ip", "cat", "mv", "printf", "sleep", "echo", "ls", "mkdir", "rm", "test", "["} {
		s.Symlinks = append(s.Symlinks, images.Symlink{Path: "/bin/" + a, Target: "busybox"})
	}
	s.Dirs = append(s.Dirs, images.Dir{Path: "/tmp", Mode: 0o1777}, images.Dir{Path: "/run"})
	return s, nil
}

// nodeImages are the images the node imports at boot: kubeadm's control plane,
// etcd, CoreDNS, pause and the tools image.
func nodeImages(in inputs) ([]images.Spec, error) {
	k := localcluster.KubernetesVersion
	tools, err := toolsImage(in)
	if err != nil {
		return nil, err
	}
	coredns := binaryImage(registry+"coredns/coredns:"+corednsTag, in.img.CoreDNS, "coredns")
	// kubeadm's CoreDNS binds port 53 with NET_BIND_SERVICE, which a non-root
	// user would only have through a file capability: it runs as root here.
	coredns.Entrypoint = []string{"/usr/local/bin/coredns"}
	coredns.Files = append(coredns.Files, images.CABundle()...)
	specs := []images.Spec{
		binaryImage(registry+"kube-apiserver:"+k, in.cp.APIServer, "kube-apiserver"),
		binaryImage(registry+"kube-controller-manager:"+k, in.cp.ControllerManager, "kube-controller-manager"),
		binaryImage(registry+"kube-scheduler:"+k, in.cp.Scheduler, "kube-scheduler"),
		binaryImage(registry+"etcd:"+etcdTag, in.cp.Etcd, "etcd"),
		coredns,
		images.PauseSpec(in.pause),
		tools,
	}
	return specs, nil
}

// buildImages writes each spec's archive (cached by content) and returns them.
func buildImages(specs []images.Spec) ([]string, error) {
	var tars []string
	for _, s := range specs {
		tar, err := images.Build(s, images.DefaultDir())
		if err != nil {
			return nil, fmt.Errorf("building image %s: %w", s.Ref, err)
		}
		tars = append(tars, tar)
	}
	return tars, nil
}
