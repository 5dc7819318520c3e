package images

// KubernetesRepository is the repository of vCluster's distro image; its tag is
// the Kubernetes version the chart is told to run.
const KubernetesRepository = "ghcr.io/loft-sh/kubernetes"

// KubernetesInputs are the control-plane binaries of the distro image.
type KubernetesInputs struct {
	APIServer         string
	ControllerManager string
	Scheduler         string
	// Kine is vCluster's default backing store (sqlite behind an etcd API).
	Kine string
	// Busybox is a static busybox; empty means HostBusybox.
	Busybox string
}

// Binaries are the host paths of the binaries vCluster runs from /binaries.
func (in KubernetesInputs) Binaries() []string {
	return []string{in.APIServer, in.ControllerManager, in.Scheduler, in.Kine}
}

// Kubernetes is the distro image, tagged e.g. "v1.36.3". The chart only runs it as
// an init container, `cp -r /kubernetes/. /binaries/`, so besides the binaries it
// needs a cp on PATH (busybox) and nothing else.
func Kubernetes(tag string, in KubernetesInputs) Spec {
	bb, links := busyboxFiles(in.Busybox, "sh", "cp")
	// vCluster starts them by these names, whatever the host files are called.
	files := []File{
		{Source: in.APIServer, Path: "/kubernetes/kube-apiserver", Mode: Executable},
		{Source: in.ControllerManager, Path: "/kubernetes/kube-controller-manager", Mode: Executable},
		{Source: in.Scheduler, Path: "/kubernetes/kube-scheduler", Mode: Executable},
		{Source: in.Kine, Path: "/kubernetes/kine", Mode: Executable},
	}
	return Spec{
		Ref:         KubernetesRepository + ":" + tag,
		Files:       append(files, bb...),
		Symlinks:    links,
		LibrariesOf: []string{bb[0].Source},
		Env:         []string{pathEnv},
	}
}
