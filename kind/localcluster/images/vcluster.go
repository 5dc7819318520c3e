package images

// VClusterRef is the syncer image vCluster v0.36.1's chart runs (OSS edition).
const VClusterRef = "ghcr.io/loft-sh/vcluster-oss:0.36.1"

// VClusterInputs are the host files of the vCluster image.
type VClusterInputs struct {
	// Binary is vcluster built from github.com/loft-sh/vcluster/cmd/vcluster.
	Binary string
	// Busybox is a static busybox; empty means HostBusybox.
	Busybox string
	// Runs are the binaries the syncer starts from /binaries (the distro image's
	// init container copies them there, see KubernetesInputs.Binaries). /binaries is
	// only a volume, so their shared libraries must come with this image.
	Runs []string
}

// VCluster is the vCluster control-plane image: `vcluster start` with the
// directories its chart mounts volumes on and the folders it writes to, and a
// shell for the commands the chart and vCluster run.
func VCluster(in VClusterInputs) Spec {
	bb, links := busyboxFiles(in.Busybox, "sh", "cp", "mkdir", "cat", "ls", "sleep")
	files := append([]File{{Source: in.Binary, Path: "/vcluster", Mode: Executable}}, bb...)
	return Spec{
		Ref:      VClusterRef,
		Files:    append(files, CABundle()...),
		Symlinks: links,
		Dirs: []Dir{
			{Path: "/data"}, {Path: "/binaries"}, {Path: "/pki"}, {Path: "/.cache/helm"},
			{Path: "/var/lib/vcluster"}, {Path: "/root"}, {Path: "/tmp", Mode: 0o1777},
		},
		LibrariesOf: append([]string{in.Binary, bb[0].Source}, in.Runs...),
		Entrypoint:  []string{"/vcluster", "start"},
		Env:         []string{pathEnv},
	}
}
