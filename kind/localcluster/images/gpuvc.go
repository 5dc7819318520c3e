package images

// GpuvcRef is the default reference of the gpuvc image built for tests.
const GpuvcRef = "ghcr.io/gpuvc/gpuvc:dev"

// Gpuvc is the gpuvc image, shaped like the repository's Dockerfile (distroless
// cc, nonroot): the binary on PATH at /usr/local/bin/gpuvc, because reservation pods
// run the command ["gpuvc", "reserve"], with the glibc it links against (go-nvml
// needs cgo), CA certificates and user 65532. An empty ref means GpuvcRef.
func Gpuvc(ref, binary string) Spec {
	if ref == "" {
		ref = GpuvcRef
	}
	files := append([]File{{Source: binary, Path: "/usr/local/bin/gpuvc", Mode: Executable}}, CABundle()...)
	return Spec{
		Ref:         ref,
		Files:       append(files, accounts()...),
		Dirs:        nonrootDirs(),
		LibrariesOf: []string{binary},
		Entrypoint:  []string{"/usr/local/bin/gpuvc"},
		Env:         []string{pathEnv, "HOME=" + nonrootHome, "SSL_CERT_FILE=" + HostCABundle},
		User:        nonrootUser,
		WorkingDir:  nonrootHome,
	}
}
