package images

import "github.com/gpuvc/gpuvc/kind/localcluster"

// MetricsServerRef is metrics-server's image as its upstream manifests name it.
const MetricsServerRef = "registry.k8s.io/metrics-server/metrics-server:" + localcluster.MetricsServerVersion

// MetricsServer is metrics-server's image: the static binary, CA certificates
// and a writable /tmp for its self-signed serving certificate (upstream's
// manifests pass --cert-dir=/tmp with a read-only root file system and an
// emptyDir there). It runs as nonroot; its port (10250) needs no privilege.
func MetricsServer(binary string) Spec {
	return Spec{
		Ref:         MetricsServerRef,
		Files:       append([]File{{Source: binary, Path: "/metrics-server", Mode: Executable}}, CABundle()...),
		Dirs:        []Dir{{Path: "/tmp", Mode: 0o1777}},
		LibrariesOf: []string{binary},
		Entrypoint:  []string{"/metrics-server"},
		User:        nonrootUser,
		WorkingDir:  "/",
	}
}
