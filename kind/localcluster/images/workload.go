package images

// WorkloadRef is the image of team pods in end-to-end tests.
const WorkloadRef = "gpuvc.dev/e2e/workload:1"

// workloadApplets are what test and trial pods do: sleep, print their
// environment, serve and fetch HTTP (httpd, wget), talk TCP (nc), resolve names
// (nslookup), and read and write files on a volume. Debian's busybox-static is
// built without wget's -T: it still parses the option and stores the number
// through a null pointer (SIGSEGV, exit 139), so bound a fetch with `timeout`
// instead (`timeout 5 wget -q -O- http://web/`).
var workloadApplets = []string{
	"sh", "sleep", "cat", "echo", "wget", "timeout", "nc", "nslookup", "env", "printenv", "ls", "true", "false", "id", "hostname",
	// The storage provisioner's helper pods (kind/localaddons) make and remove
	// volume directories.
	"mkdir", "chmod", "rm", "date", "df", "grep", "head", "tail", "wc", "httpd",
	// vCluster's hosts rewrite of StatefulSet pods (kind/localstack.Values).
	"sed",
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
