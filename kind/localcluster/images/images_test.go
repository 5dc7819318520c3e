package images_test

import (
	"bufio"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"

	"github.com/gpuvc/gpuvc/kind/localcluster/images"
)

func TestVCluster(t *testing.T) {
	requireHostBusybox(t)
	runs := "/bin/ls" // a dynamic stand-in for the Kubernetes binaries vCluster runs
	img := build(t, images.VCluster(images.VClusterInputs{Binary: standIn(t, "vcluster"), Runs: []string{runs}}))

	if diff := cmp.Diff([]string{"/vcluster", "start"}, img.config.Entrypoint); diff != "" {
		t.Errorf("entrypoint (-want +got):\n%s", diff)
	}
	require.Contains(t, img.config.Env[0], "PATH=")
	img.requireFile(t, "/vcluster", 0o755)
	img.requireFile(t, "/bin/busybox", 0o755)
	for _, applet := range []string{"sh", "cp", "mkdir", "cat", "ls", "sleep"} {
		img.requireSymlink(t, "/bin/"+applet, "busybox")
	}
	for _, d := range []string{"/data", "/binaries", "/pki", "/.cache/helm", "/var/lib/vcluster", "/root"} {
		img.requireDir(t, d, 0o755, 0)
	}
	img.requireDir(t, "/tmp", 0o1777, 0)
	img.requireFile(t, hostInterpreter, 0o755)
	img.requireFile(t, "/lib/x86_64-linux-gnu/libc.so.6", 0o755)
	requireCABundle(t, img)

	root := img.unpack(t)
	out := runIn(t, root, img.config, 0, "", "sh", "-c", "mkdir -p /tmp/x && ls /tmp")
	require.Equal(t, "x\n", out)
	// What vCluster does with the distro's binaries: start them from the volume.
	require.NoError(t, os.MkdirAll(filepath.Join(root, "binaries"), 0o755))
	copyFile(t, runs, filepath.Join(root, "binaries", "ls"))
	runIn(t, root, img.config, 0, "", "/binaries/ls", "/")
}

func TestKubernetesDistro(t *testing.T) {
	requireHostBusybox(t)
	in := images.KubernetesInputs{
		APIServer:         standIn(t, "apiserver"),
		ControllerManager: standIn(t, "kcm"),
		Scheduler:         standIn(t, "scheduler"),
		Kine:              standIn(t, "kine"),
	}
	img := build(t, images.Kubernetes("v1.36.3", in))
	require.Equal(t, "ghcr.io/loft-sh/kubernetes:v1.36.3", images.Kubernetes("v1.36.3", in).Ref)
	for _, b := range []string{"kube-apiserver", "kube-controller-manager", "kube-scheduler", "kine"} {
		img.requireFile(t, "/kubernetes/"+b, 0o755)
	}
	img.requireSymlink(t, "/bin/cp", "busybox")
	img.requireSymlink(t, "/bin/sh", "busybox")

	// The chart's init container: command cp, args -r /kubernetes/. /binaries/,
	// with /binaries an empty volume.
	root := img.unpack(t)
	require.NoError(t, os.Mkdir(filepath.Join(root, "binaries"), 0o755))
	runIn(t, root, img.config, 0, "", "cp", "-r", "/kubernetes/.", "/binaries/")
	for _, b := range []string{"kube-apiserver", "kube-controller-manager", "kube-scheduler", "kine"} {
		info, err := os.Stat(filepath.Join(root, "binaries", b))
		require.NoError(t, err, "cp did not copy %s", b)
		require.Equal(t, os.FileMode(0o755), info.Mode().Perm(), b)
	}
	got, err := os.ReadFile(filepath.Join(root, "binaries", "kine"))
	require.NoError(t, err)
	want, err := os.ReadFile(in.Kine)
	require.NoError(t, err)
	require.Equal(t, want, got)
}

func TestCoreDNS(t *testing.T) {
	img := build(t, images.CoreDNS(standIn(t, "coredns")))
	if diff := cmp.Diff([]string{"/coredns"}, img.config.Entrypoint); diff != "" {
		t.Errorf("entrypoint (-want +got):\n%s", diff)
	}
	require.Equal(t, "65532:65532", img.config.User)
	img.requireFile(t, "/coredns", 0o755)
	img.requireDir(t, "/etc/coredns", 0o755, 0)
	requireCABundle(t, img)
	require.Equal(t, "docker.io/coredns/coredns:1.14.2", images.CoreDNSRef)
}

func TestMetricsServer(t *testing.T) {
	img := build(t, images.MetricsServer(standIn(t, "metrics-server")))
	if diff := cmp.Diff([]string{"/metrics-server"}, img.config.Entrypoint); diff != "" {
		t.Errorf("entrypoint (-want +got):\n%s", diff)
	}
	require.Equal(t, "65532:65532", img.config.User)
	img.requireFile(t, "/metrics-server", 0o755)
	img.requireDir(t, "/tmp", 0o1777, 0)
	requireCABundle(t, img)
	require.Equal(t, "registry.k8s.io/metrics-server/metrics-server:v0.8.0", images.MetricsServerRef)
}

func TestGpuvc(t *testing.T) {
	bin := "/bin/ls" // dynamically linked like gpuvc
	if !testing.Short() {
		bin = cgoProgram(t)
	}
	spec := images.Gpuvc("", bin)
	require.Equal(t, images.GpuvcRef, spec.Ref)
	require.Equal(t, "example.test/gpuvc:x", images.Gpuvc("example.test/gpuvc:x", bin).Ref)
	img := build(t, spec)

	if diff := cmp.Diff([]string{"/usr/local/bin/gpuvc"}, img.config.Entrypoint); diff != "" {
		t.Errorf("entrypoint (-want +got):\n%s", diff)
	}
	require.Equal(t, "65532:65532", img.config.User)
	require.Contains(t, img.config.Env, "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
	img.requireFile(t, "/usr/local/bin/gpuvc", 0o755)
	img.requireFile(t, hostInterpreter, 0o755)
	img.requireFile(t, "/lib/x86_64-linux-gnu/libc.so.6", 0o755)
	img.requireFile(t, "/etc/passwd", 0o644)
	img.requireDir(t, "/home/nonroot", 0o700, images.NonrootUID)
	img.requireDir(t, "/tmp", 0o1777, 0)
	requireCABundle(t, img)

	// Reservation pods run the command ["gpuvc", "reserve"]: found on PATH, started
	// as nonroot with nothing but the image's files.
	root := img.unpack(t)
	out := runIn(t, root, img.config, images.NonrootUID, "", "gpuvc", "--version")
	if !testing.Short() {
		require.Equal(t, "cgo 7\n", out)
	}
}

func TestWorkload(t *testing.T) {
	requireHostBusybox(t)
	img := build(t, images.Workload(images.HostBusybox))
	if diff := cmp.Diff([]string{"/bin/sh"}, img.config.Entrypoint); diff != "" {
		t.Errorf("entrypoint (-want +got):\n%s", diff)
	}
	require.Equal(t, "65532:65532", img.config.User)

	applets := appletsOf(t, images.HostBusybox)
	for _, a := range []string{"sh", "sleep", "cat", "echo", "wget", "timeout", "nc", "env", "ls", "true"} {
		img.requireSymlink(t, "/bin/"+a, "busybox")
		require.True(t, applets[a], "busybox has no %s applet", a)
	}

	root := img.unpack(t)
	out := runIn(t, root, img.config, images.NonrootUID, "", "sh", "-c", "sleep 0 && env")
	require.Contains(t, out, "HOME=/home/nonroot")

	// A pod talking to another pod over TCP: nc to a listener outside the chroot.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	got := make(chan string, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			got <- err.Error()
			return
		}
		defer c.Close()
		line, _ := bufio.NewReader(c).ReadString('\n')
		got <- line
	}()
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	runIn(t, root, img.config, images.NonrootUID, "ping\n", "nc", "127.0.0.1", port)
	require.Equal(t, "ping\n", <-got)

	// A page fetched as the trial's report and the e2e suite do: wget bounded
	// by timeout (this busybox's own wget -T segfaults: workload.go).
	page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("hello from web\n")) }))
	defer page.Close()
	out = runIn(t, root, img.config, images.NonrootUID, "", "sh", "-c", "timeout 5 wget -q -O- "+page.URL+"/")
	require.Equal(t, "hello from web\n", out)
}

// TestWgetTimeoutOptionCrashes pins why the workload image has `timeout` and
// nothing here passes wget -T: Debian's busybox-static 1.35 is built without
// wget's timeout feature, yet parses -T and writes its value through a null
// pointer (SIGSEGV). When a busybox without that bug is installed, this fails:
// -T may then be used again.
func TestWgetTimeoutOptionCrashes(t *testing.T) {
	requireHostBusybox(t)
	page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("hello\n")) }))
	defer page.Close()
	err := exec.Command(images.HostBusybox, "wget", "-q", "-T", "5", "-O", "/dev/null", page.URL+"/").Run()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit, "busybox wget -T no longer fails: the workaround in workload.go can go")
	status, ok := exit.Sys().(syscall.WaitStatus)
	require.True(t, ok)
	require.True(t, status.Signaled() && status.Signal() == syscall.SIGSEGV, "busybox wget -T: %v", err)
	require.NoError(t, exec.Command(images.HostBusybox, "wget", "-q", "-O", "/dev/null", page.URL+"/").Run(), "busybox wget without -T")
}

func requireCABundle(t *testing.T, img builtImage) {
	t.Helper()
	if _, err := os.Stat(images.HostCABundle); err != nil {
		return
	}
	img.requireFile(t, images.HostCABundle, 0o644)
}

// appletsOf lists what a busybox binary can be started as.
func appletsOf(t *testing.T, busybox string) map[string]bool {
	t.Helper()
	out, err := exec.Command(busybox, "--list").Output()
	require.NoError(t, err)
	applets := map[string]bool{}
	for _, a := range strings.Fields(string(out)) {
		applets[a] = true
	}
	return applets
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(to, b, 0o755))
}
