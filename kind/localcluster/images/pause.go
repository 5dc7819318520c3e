package images

// PauseRef is the sandbox image of the end-to-end node; containerd is configured
// with exactly this name, so it never tries to pull one.
const PauseRef = "registry.k8s.io/pause:3.10"

// pauseUser is the user the upstream pause image runs as; it needs no privileges.
const pauseUser = "65535:65535"

// PauseSpec is the pause image of a pause program built already (the builder
// records it in the manifest as localcluster.FilePause).
func PauseSpec(bin string) Spec {
	return Spec{
		Ref:        PauseRef,
		Files:      []File{{Source: bin, Path: "/pause", Mode: Executable}},
		Entrypoint: []string{"/pause"},
		User:       pauseUser,
	}
}
