package localnode_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/utils/ptr"

	"github.com/gpuvc/gpuvc/e2e/testsupport/poll"
	"github.com/gpuvc/gpuvc/e2e/testsupport/testobj"
	"github.com/gpuvc/gpuvc/kind/localcluster"
	"github.com/gpuvc/gpuvc/kind/localcluster/images"
	"github.com/gpuvc/gpuvc/kind/localnode"
)

func testContext(t *testing.T) context.Context {
	return poll.Context(t, 4*time.Minute)
}

// startNode starts a node with the package's images and stops it when the test
// ends; it logs the start figures.
func startNode(t *testing.T, ctx context.Context, cp *localcluster.ControlPlane, opts localnode.Options) *localnode.Node {
	t.Helper()
	if opts.Name == "" {
		opts.Name = "worker"
	}
	opts.Images = append(opts.Images, imageTars...)
	opts.PauseImage = images.PauseRef
	opts.Log = testWriter{t}
	began := time.Now()
	n, err := localnode.Start(ctx, cp, nodeBins, opts)
	require.NoError(t, err)
	t.Logf("node %s: Start took %v, kubelet start → Ready %v", n.Name, time.Since(began).Round(time.Millisecond), n.ReadyAfter.Round(time.Millisecond))
	t.Cleanup(func() {
		if t.Failed() {
			for _, c := range []localnode.Component{localnode.Kubelet, localnode.Containerd} {
				t.Logf("%s log tail:\n%s", c, tailFile(n.LogPath(c), 30))
			}
		}
		require.NoError(t, n.Stop())
	})
	return n
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

func tailFile(path string, lines int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	parts := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(parts) > lines {
		parts = parts[len(parts)-lines:]
	}
	return strings.Join(parts, "\n")
}

// namespace creates a namespace named prefix-<random> deleted when the test
// ends: pods of a stopped node linger until the pod garbage collector takes them,
// so a repeated test must not reuse the name.
func namespace(t *testing.T, ctx context.Context, cp *localcluster.ControlPlane, prefix string) string {
	t.Helper()
	ns := testobj.Namespace("", nil)
	ns.GenerateName = prefix + "-"
	created, err := cp.Client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{})
	require.NoError(t, err)
	name := created.Name
	t.Cleanup(func() {
		_ = cp.Client.CoreV1().Namespaces().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	require.NoError(t, cp.WaitForServiceAccount(ctx, name, "default"))
	return name
}

// workloadPod is a pod of the workload image running script with /bin/sh.
func workloadPod(name, ns, script string) *testobj.PodWrapper {
	return testobj.Pod(name, ns).Edit(func(p *corev1.Pod) {
		c := &p.Spec.Containers[0]
		c.Image = images.WorkloadRef
		c.ImagePullPolicy = corev1.PullNever
		c.Command = []string{"/bin/sh", "-c", script}
		p.Spec.TerminationGracePeriodSeconds = ptr.To(int64(1))
	})
}

// runPod creates the pod and waits until it runs; it returns the running pod
// and how long that took from creation.
func runPod(t *testing.T, ctx context.Context, cp *localcluster.ControlPlane, pod *corev1.Pod) (*corev1.Pod, time.Duration) {
	t.Helper()
	began := time.Now()
	_, err := cp.Client.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{})
	require.NoError(t, err)
	got := waitPod(t, ctx, cp, pod.Namespace, pod.Name, func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning })
	return got, time.Since(began)
}

// waitPod polls a pod until done accepts it, failing on a pod that ended otherwise.
func waitPod(t *testing.T, ctx context.Context, cp *localcluster.ControlPlane, ns, name string, done func(*corev1.Pod) bool) *corev1.Pod {
	t.Helper()
	var last *corev1.Pod
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		p, err := cp.Client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		last = p
		if done(p) {
			return true, nil
		}
		if p.Status.Phase == corev1.PodFailed {
			return false, fmt.Errorf("pod %s/%s failed: %s", ns, name, p.Status.Message)
		}
		return false, nil
	})
	require.NoError(t, err, "pod %s/%s; last status: %+v", ns, name, statusOf(last))
	return last
}

func statusOf(p *corev1.Pod) any {
	if p == nil {
		return nil
	}
	return p.Status
}

func podLogs(ctx context.Context, cp *localcluster.ControlPlane, ns, name string) (string, error) {
	b, err := cp.Client.CoreV1().Pods(ns).GetLogs(name, &corev1.PodLogOptions{}).DoRaw(ctx)
	return string(b), err
}

// execPod runs a command in a pod's first container through the API server
// (which calls the kubelet with its client certificate) and returns its output.
func execPod(ctx context.Context, cp *localcluster.ControlPlane, ns, name string, command ...string) (string, error) {
	req := cp.Client.CoreV1().RESTClient().Post().Resource("pods").Namespace(ns).Name(name).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{Command: command, Stdout: true, Stderr: true}, scheme.ParameterCodec)
	ws, err := remotecommand.NewWebSocketExecutor(cp.Config, "GET", req.URL().String())
	if err != nil {
		return "", err
	}
	spdy, err := remotecommand.NewSPDYExecutor(cp.Config, "POST", req.URL())
	if err != nil {
		return "", err
	}
	exec, err := remotecommand.NewFallbackExecutor(ws, spdy, func(error) bool { return true })
	if err != nil {
		return "", err
	}
	var stdout, stderr bytes.Buffer
	err = exec.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: &stdout, Stderr: &stderr})
	if err != nil {
		return stdout.String(), fmt.Errorf("exec %v in %s/%s: %w (stderr: %s)", command, ns, name, err, stderr.String())
	}
	return stdout.String(), nil
}

// pollExec runs a command in a pod until its output contains want.
func pollExec(t *testing.T, ctx context.Context, cp *localcluster.ControlPlane, ns, name, want string, command ...string) time.Duration {
	t.Helper()
	began := time.Now()
	var out string
	var last error
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		out, last = execPod(ctx, cp, ns, name, command...)
		return strings.Contains(out, want), nil
	})
	require.NoError(t, err, "exec %v in %s/%s never printed %q; last output %q, error %v", command, ns, name, want, out, last)
	return time.Since(began)
}

type podWrapper = testobj.PodWrapper

// trimPrefixLine returns what follows prefix on the first line starting with it.
func trimPrefixLine(text, prefix string) string {
	for _, line := range strings.Split(text, "\n") {
		if v, ok := strings.CutPrefix(line, prefix); ok {
			return v
		}
	}
	return ""
}
