package images

// WorkloadRef is the image of team pods in end-to-end tests.
const WorkloadRef = "gpuvc.dev/e2e/workload:1"

// workloadApplets are what test pods do: sleep, print their environment, and talk
// to each other over TCP (nc, wget).
var workloadApplets = []string{
	"sh", "sleep", "cat", "echo", "wget", "nc", "env", "printenv", "ls", "true", "false", "id", "hostname",
}

// Workload is a busybox image for test pods, entrypoint /bin/sh. It runs as
// nonroot (65532), so pods that ask for runAsNonRoot (the restricted Pod Security
// Standard does) start without naming a runAsUser.
func Workload(busybox string) Spec {
	bb, links := busyboxFiles(busybox, workloadApplets...)
	return Spec{
		Ref:         WorkloadRef,
		Files:       append(bb, accounts()...),
		Symlinks:    links,
		Dirs:        nonrootDirs(),
		LibrariesOf: []string{bb[0].Source},
		Entrypoint:  []string{"/bin/sh"},
		Env:         []string{pathEnv, "HOME=" + nonrootHome},
		User:        nonrootUser,
		WorkingDir:  nonrootHome,
	}
}
