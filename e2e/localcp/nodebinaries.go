package localcp

import (
	"context"
	"fmt"
	"io"
	"path/filepath"

	"github.com/gpuvc/gpuvc/kind/localcluster"
)

// nodeBuilds are the builds of a real worker node's binaries, in build order:
// containerd and kubelet/kube-proxy first, kube-router (NetworkPolicy) last.
func nodeBuilds() []toolBuild {
	return []toolBuild{
		{
			name:    "containerd",
			version: localcluster.ContainerdVersion,
			packages: []string{
				"github.com/containerd/containerd/v2/cmd/containerd",
				"github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2",
				"github.com/containerd/containerd/v2/cmd/ctr",
			},
			ldflags: "-s -w -X github.com/containerd/containerd/v2/version.Version=" + localcluster.ContainerdVersion,
			env:     []string{"CGO_ENABLED=0"},
			// The snapshotters these leave out need cgo or host libraries; the node
			// uses overlayfs.
			tags: []string{"no_btrfs", "no_devmapper", "no_zfs", "no_aufs"},
		},
		{
			// Same wrapper module, version and flags as the control plane, under its
			// own cache entry so adding these does not rebuild the control plane; the
			// shared Go build cache makes it quick after the control-plane build.
			name:    "kubernetes-node",
			module:  "kubernetes",
			version: localcluster.KubernetesVersion,
			packages: []string{
				"k8s.io/kubernetes/cmd/kubelet",
				"k8s.io/kubernetes/cmd/kube-proxy",
			},
			ldflags: kubernetesLDFlags(),
		},
		{
			name:     "kube-router",
			version:  localcluster.KubeRouterVersion,
			packages: []string{"github.com/cloudnativelabs/kube-router/v2/cmd/kube-router"},
			ldflags:  "-s -w -X github.com/cloudnativelabs/kube-router/v2/pkg/version.Version=" + localcluster.KubeRouterVersion,
			env:      []string{"CGO_ENABLED=0"},
		},
	}
}

// imageBuilds are the builds of the binaries in vCluster's control-plane images.
// Those images have no libc, so every build is static.
func imageBuilds() []toolBuild {
	return []toolBuild{
		{
			name:     "vcluster",
			version:  localcluster.VClusterVersion,
			packages: []string{"github.com/loft-sh/vcluster/cmd/vcluster"},
			// telemetry.SyncerVersion is left at "dev" on purpose: vCluster then never
			// tries to send telemetry, whatever the values say (there is no internet).
			ldflags: "-s -w",
			env:     []string{"CGO_ENABLED=0"},
		},
		{
			// kine's sqlite driver is mattn/go-sqlite3 (cgo) when cgo is on, as in
			// kine's own releases. Linked statically against glibc: netgo and
			// osusergo keep glibc's NSS (which cannot work in a static binary) out;
			// sqlite_omit_load_extension and no_antithesis_sdk (a test-instrumentation
			// SDK nats-server pulls in) keep dlopen out. The other sqlite_* feature
			// tags follow kine's own build script.
			name:     "kine",
			version:  localcluster.KineVersion,
			packages: []string{"github.com/k3s-io/kine"},
			ldflags:  "-s -w -extldflags -static -X github.com/k3s-io/kine/pkg/version.Version=" + localcluster.KineVersion,
			env:      []string{"CGO_ENABLED=1"},
			tags: []string{
				"netgo", "osusergo", "sqlite_omit_load_extension", "no_antithesis_sdk",
				"sqlite_unlock_notify", "sqlite_vtable", "sqlite_stat4", "sqlite_preupdate_hook",
				"sqlite_math_functions", "sqlite_dbstat", "sqlite_column_metadata",
			},
		},
		{
			name:     "coredns",
			version:  localcluster.CoreDNSVersion,
			packages: []string{"github.com/coredns/coredns"},
			ldflags:  "-s -w",
			env:      []string{"CGO_ENABLED=0"},
		},
	}
}

// kindNodeBuilds are the builds only a kind node image adds to a real node's:
// kubeadm, which kind runs in its nodes to bring the cluster up.
func kindNodeBuilds() []toolBuild {
	return []toolBuild{{
		name:     "kubeadm",
		version:  localcluster.KubernetesVersion,
		packages: []string{"k8s.io/kubernetes/cmd/kubeadm"},
		ldflags:  kubernetesLDFlags(),
	}}
}

// EnsureKubeadm returns kubeadm (built like the other Kubernetes binaries, unless
// cached), for kind's node image built offline.
func EnsureKubeadm(ctx context.Context, log io.Writer) (string, error) {
	dirs, err := ensureTools(ctx, kindNodeBuilds(), newProgress(log, len(kindNodeBuilds())))
	if err != nil {
		return "", err
	}
	return filepath.Join(dirs["kubeadm"], "kubeadm"), nil
}

// ensureTools builds (unless cached) each of builds in order and returns their cache
// folders by name.
func ensureTools(ctx context.Context, builds []toolBuild, pr *progress) (map[string]string, error) {
	dirs := map[string]string{}
	for _, tb := range builds {
		dir, err := ensureTool(ctx, tb, pr)
		if err != nil {
			return nil, err
		}
		dirs[tb.name] = dir
	}
	return dirs, nil
}

// EnsureNodeBinaries returns the binaries of a real worker node (containerd with its
// runc shim and ctr, kubelet, kube-proxy, kube-router), building any that are not
// cached yet, like EnsureBinaries. runc, the CNI plugins, iptables and ipset come
// from the host (Debian packages).
func EnsureNodeBinaries(ctx context.Context, log io.Writer) (*localcluster.NodeBinaries, error) {
	dirs, err := ensureTools(ctx, nodeBuilds(), newProgress(log, len(nodeBuilds())))
	if err != nil {
		return nil, err
	}
	return &localcluster.NodeBinaries{
		Kubelet:        filepath.Join(dirs["kubernetes-node"], "kubelet"),
		KubeProxy:      filepath.Join(dirs["kubernetes-node"], "kube-proxy"),
		Containerd:     filepath.Join(dirs["containerd"], "containerd"),
		ContainerdShim: filepath.Join(dirs["containerd"], "containerd-shim-runc-v2"),
		Ctr:            filepath.Join(dirs["containerd"], "ctr"),
		KubeRouter:     filepath.Join(dirs["kube-router"], "kube-router"),
	}, nil
}

// EnsureImageBinaries returns the static binaries of vCluster's control-plane images
// (vcluster, kine, coredns), building any that are not cached yet, like
// EnsureBinaries. The Kubernetes binaries of those images come from EnsureBinaries.
func EnsureImageBinaries(ctx context.Context, log io.Writer) (*localcluster.ImageBinaries, error) {
	dirs, err := ensureTools(ctx, imageBuilds(), newProgress(log, len(imageBuilds())))
	if err != nil {
		return nil, err
	}
	if err := recordImageFiles(ctx); err != nil {
		return nil, err
	}
	return &localcluster.ImageBinaries{
		VCluster: filepath.Join(dirs["vcluster"], "vcluster"),
		Kine:     filepath.Join(dirs["kine"], "kine"),
		CoreDNS:  filepath.Join(dirs["coredns"], "coredns"),
	}, nil
}

// EnsureAll builds (unless cached) every binary the local cluster, a real node,
// vCluster's images and Kueue run, numbering its progress lines across all of them, and
// lists them in the manifest the product reads. `make binaries` runs it.
func EnsureAll(ctx context.Context, log io.Writer) error {
	all := append(append(append(append(toolBuilds(), nodeBuilds()...), addonBuilds()...), imageBuilds()...), kueueBuild())
	pr := newProgress(log, len(all))
	if _, err := ensureTools(ctx, all, pr); err != nil {
		return err
	}
	if err := recordKwokStages(); err != nil {
		return err
	}
	if err := recordImageFiles(ctx); err != nil {
		return err
	}
	if err := recordKueueConfig(); err != nil {
		return err
	}
	fmt.Fprintf(pr.log, "binaries: all %d builds ready in %v; listed in %s\n", len(all), pr.elapsed(), localcluster.ManifestPath())
	return nil
}
