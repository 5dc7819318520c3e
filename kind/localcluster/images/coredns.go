package images

// CoreDNSRef is the CoreDNS image vCluster v0.36.1 deploys into a virtual cluster
// running Kubernetes 1.36 (fully qualified, as vCluster writes it).
const CoreDNSRef = "docker.io/coredns/coredns:1.14.2"

// CoreDNS is the CoreDNS image. vCluster's Deployment passes
// `-conf /etc/coredns/Corefile` (a ConfigMap mount), listens on 1053 and runs it as
// uid 1001 with a read-only root file system, so the image needs nothing but the
// binary, its shared libraries, CA certificates and the mount point.
func CoreDNS(binary string) Spec {
	return Spec{
		Ref:         CoreDNSRef,
		Files:       append([]File{{Source: binary, Path: "/coredns", Mode: Executable}}, CABundle()...),
		Dirs:        []Dir{{Path: "/etc/coredns"}},
		LibrariesOf: []string{binary},
		Entrypoint:  []string{"/coredns"},
		User:        nonrootUser,
		WorkingDir:  "/",
	}
}
