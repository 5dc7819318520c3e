package reserve_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"github.com/gpuvc/gpuvc/api/contract"
	agentcmd "github.com/gpuvc/gpuvc/cmd/gpuvc/commands/agent"
	"github.com/gpuvc/gpuvc/cmd/gpuvc/commands/cli"
	reservecmd "github.com/gpuvc/gpuvc/cmd/gpuvc/commands/reserve"
	"github.com/gpuvc/gpuvc/e2e/localcp"
	"github.com/gpuvc/gpuvc/e2e/testsupport/identity"
	"github.com/gpuvc/gpuvc/e2e/testsupport/poll"
	"github.com/gpuvc/gpuvc/e2e/testsupport/testobj"
	"github.com/gpuvc/gpuvc/gpu/inventory"
	"github.com/gpuvc/gpuvc/gpu/nodeagent/deviceplugin/fakekubelet"
	"github.com/gpuvc/gpuvc/kind/localcluster"
	"github.com/gpuvc/gpuvc/syncer/share/reserve"
)

func TestMain(m *testing.M) {
	os.Exit(localcp.RunTests(m, localcluster.Options{}, nil))
}

// reservationNamespace creates a namespace named prefix-<random> (tests can
// run again on the same control plane while the last one terminates) holding
// a ServiceAccount with the RBAC docs/agent.md documents for reservation pods
// (get, patch pods in their namespace), and returns its name, a kubeconfig and
// a client authenticated as that ServiceAccount.
func reservationNamespace(ctx context.Context, t *testing.T, cp *localcluster.ControlPlane, prefix string) (string, string, kubernetes.Interface) {
	t.Helper()
	const sa = "gpuvc-reserve"
	ns := prefix + "-" + utilrand.String(5)
	c := cp.Client
	_, err := c.CoreV1().Namespaces().Create(ctx, testobj.Namespace(ns, nil), metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{}) })
	require.NoError(t, cp.WaitForServiceAccount(ctx, ns, "default"))
	_, err = c.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa}}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = c.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: sa},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "patch"}}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = c.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: sa},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: sa},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa, Namespace: ns}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	path, client := identity.ServiceAccount(ctx, t, c, cp.Config, ns, sa)
	return ns, path, client
}

// reservationPod creates a reservation-like pod (nvidia.com/gpu: 1) bound
// to node; kwok runs it.
func reservationPod(ctx context.Context, t *testing.T, c kubernetes.Interface, ns, name, node string) *corev1.Pod {
	t.Helper()
	pod := testobj.Pod(name, ns).GPUs("1").TolerateEverything().NodeName(node).Obj()
	got, err := c.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
	require.NoError(t, err)
	return got
}

// waitAnnotation watches the pod until its GPU annotation equals want or
// the result channel of the process under test reports first.
func waitAnnotation(ctx context.Context, t *testing.T, c kubernetes.Interface, ns, name, want string, exited <-chan error) {
	t.Helper()
	w, err := c.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String()})
	require.NoError(t, err)
	defer w.Stop()
	deadline := time.After(30 * time.Second)
	for {
		select {
		case ev, ok := <-w.ResultChan():
			require.True(t, ok, "watch closed")
			if p, isPod := ev.Object.(*corev1.Pod); isPod && p.Annotations[contract.AnnotationGPUUUID] == want {
				return
			}
		case err := <-exited:
			t.Fatalf("gpuvc reserve exited before annotating its pod: %v", err)
		case <-deadline:
			t.Fatalf("pod %s/%s never got %s=%s", ns, name, contract.AnnotationGPUUUID, want)
		}
	}
}

// holdingSignal gives ctx a logger that closes the channel when reserve.Run
// logs that it holds its GPU.
func holdingSignal(ctx context.Context) (context.Context, <-chan struct{}) {
	ch := make(chan struct{})
	var once sync.Once
	log := funcr.New(func(_, args string) {
		if strings.Contains(args, "holding GPU until terminated") {
			once.Do(func() { close(ch) })
		}
	}, funcr.Options{})
	return logr.NewContext(ctx, log), ch
}

// lockedBuffer is a bytes.Buffer safe for the goroutines of one command; it
// can report when its content first contains a string.
type lockedBuffer struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	waiting map[string]chan struct{}
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	n, err := b.buf.Write(p)
	for s, ch := range b.waiting {
		if strings.Contains(b.buf.String(), s) {
			close(ch)
			delete(b.waiting, s)
		}
	}
	return n, err
}

// contains returns a channel closed once the buffer contains s.
func (b *lockedBuffer) contains(s string) <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	ch := make(chan struct{})
	if strings.Contains(b.buf.String(), s) {
		close(ch)
		return ch
	}
	if b.waiting == nil {
		b.waiting = map[string]chan struct{}{}
	}
	b.waiting[s] = ch
	return ch
}

// waitHolding waits until a reserve command reports that it holds its GPU.
func waitHolding(t *testing.T, out *lockedBuffer, done <-chan error) {
	t.Helper()
	select {
	case <-out.contains("holding GPU until terminated"):
	case err := <-done:
		t.Fatalf("gpuvc reserve exited instead of holding its GPU: %v; output:\n%s", err, out.String())
	case <-time.After(30 * time.Second):
		t.Fatalf("gpuvc reserve never reported holding its GPU; output:\n%s", out.String())
	}
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// runCommand executes cmd in the background; the channel gets its result.
func runCommand(ctx context.Context, cmd interface{ ExecuteContext(context.Context) error }) <-chan error {
	done := make(chan error, 1)
	go func() { done <- cmd.ExecuteContext(ctx) }()
	return done
}

func waitExit(t *testing.T, done <-chan error, what string) {
	t.Helper()
	select {
	case err := <-done:
		require.NoError(t, err, "%s after cancel", what)
	case <-time.After(30 * time.Second):
		t.Fatalf("%s did not exit after its context was cancelled", what)
	}
}

// `gpuvc reserve --simulate` in-process with the downward-API environment:
// annotates its own pod with the UUID from NVIDIA_VISIBLE_DEVICES, holds until
// cancelled, then exits cleanly — with only get/patch on pods.
func TestReserveSimulatedAnnotatesOwnPod(t *testing.T) {
	cp := localcp.ForTest(t)
	ctx := poll.TestContext(t)
	const name, uuid = "gpuvc-gpu-0", "GPU-sim-11111111-2222-3333-4444-555555555555"
	ns, kubeconfig, saClient := reservationNamespace(ctx, t, cp, "reserve-sim")
	reservationPod(ctx, t, cp.Client, ns, name, "a100-0")

	t.Setenv(reserve.PodNameEnv, name)
	t.Setenv(reserve.PodNamespaceEnv, ns)
	t.Setenv(contract.EnvVisibleDevices, uuid)
	var out lockedBuffer
	cmd := reservecmd.NewCommand(cli.Streams{Out: &out, ErrOut: &out}, &cli.Globals{Kubeconfig: kubeconfig})
	cmd.SetArgs([]string{"--simulate"})
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	start := time.Now()
	done := runCommand(runCtx, cmd)
	waitAnnotation(ctx, t, cp.Client, ns, name, uuid, done)
	t.Logf("pod annotated %v after start", time.Since(start).Round(time.Millisecond))

	waitHolding(t, &out, done)
	stop()
	waitExit(t, done, "gpuvc reserve")

	// Its rights end at its own namespace.
	patch := []byte(`{"metadata":{"annotations":{"x":"y"}}}`)
	_, err := saClient.CoreV1().Pods("default").Patch(ctx, "any", types.MergePatchType, patch, metav1.PatchOptions{})
	require.True(t, apierrors.IsForbidden(err), "patching pods in another namespace: %v", err)
}

// A second reserve process of the same pod (container restart) finds its own
// annotation and holds; one holding another GPU refuses to overwrite it, and
// refuses to keep it too, simulated or not: the container's allocation is what
// its shares must be told.
func TestReserveRestartAndConflict(t *testing.T) {
	cp := localcp.ForTest(t)
	ctx := poll.TestContext(t)
	const name = "gpuvc-gpu-1"
	ns, _, saClient := reservationNamespace(ctx, t, cp, "reserve-restart")
	reservationPod(ctx, t, cp.Client, ns, name, "a100-0")
	uuidOf := func(s string) func() (string, error) { return func() (string, error) { return s, nil } }

	for range 2 { // the second run finds its own annotation
		holdThenStop(ctx, t, reserve.Options{Client: saClient, Namespace: ns, Name: name, UUID: uuidOf("GPU-0a1b")})
		got, err := cp.Client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		require.NoError(t, err)
		require.Equal(t, "GPU-0a1b", got.Annotations[contract.AnnotationGPUUUID])
	}
	err := reserve.Run(ctx, reserve.Options{Client: saClient, Namespace: ns, Name: name, UUID: uuidOf("GPU-2c3d")})
	require.ErrorContains(t, err, "already records gpuvc.dev/gpu-uuid=GPU-0a1b but this container holds GPU GPU-2c3d")
	err = reserve.Run(ctx, reserve.Options{Client: saClient, Namespace: ns, Name: "gone", UUID: uuidOf("GPU-sim-a")})
	require.ErrorContains(t, err, "pod "+ns+"/gone not found")

	// A made-up simulated ID recorded first (the share controller's, as it
	// once did on real kubelets: issue 25) is not kept silently either.
	const shared = "gpuvc-gpu-3"
	pod := reservationPod(ctx, t, cp.Client, ns, shared, "a100-0")
	patch := []byte(`{"metadata":{"annotations":{"gpuvc.dev/gpu-uuid":"GPU-sim-a100-0-0"}}}`)
	_, err = cp.Client.CoreV1().Pods(ns).Patch(ctx, pod.Name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: "gpuvc-share"})
	require.NoError(t, err)
	err = reserve.Run(ctx, reserve.Options{Client: saClient, Namespace: ns, Name: shared, UUID: uuidOf("GPU-sim-9f8e")})
	require.ErrorContains(t, err, "already records gpuvc.dev/gpu-uuid=GPU-sim-a100-0-0 but this container holds GPU GPU-sim-9f8e")
}

// holdThenStop runs reserve.Run until it holds its GPU, then cancels it and
// waits for it to return.
func holdThenStop(ctx context.Context, t *testing.T, opts reserve.Options) {
	t.Helper()
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	runCtx, holding := holdingSignal(runCtx)
	done := make(chan error, 1)
	go func() { done <- reserve.Run(runCtx, opts) }()
	select {
	case <-holding:
	case err := <-done:
		t.Fatalf("reserve.Run returned %v instead of holding", err)
	case <-time.After(30 * time.Second):
		t.Fatal("reserve.Run never started holding")
	}
	stop()
	waitExit(t, done, "reserve.Run")
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// Another writer (the share controller) records a UUID between Annotate's
// read and its patch: the real API server refuses the stale patch, Annotate
// reads again, finds another GPU recorded and refuses; the first writer's
// UUID stays on the pod.
func TestReserveConcurrentWriter(t *testing.T) {
	cp := localcp.ForTest(t)
	ctx := poll.TestContext(t)
	ns, kubeconfig, _ := reservationNamespace(ctx, t, cp, "reserve-race")
	tests := map[string]struct {
		pod, theirs, mine string
		wantErr           string
	}{
		"simulated": {pod: "gpuvc-gpu-4", theirs: "GPU-sim-a100-0-1", mine: "GPU-sim-77aa", wantErr: "refusing to change it"},
		"real":      {pod: "gpuvc-gpu-5", theirs: "GPU-1b2c", mine: "GPU-3d4e", wantErr: "refusing to change it"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			reservationPod(ctx, t, cp.Client, ns, tc.pod, "a100-0")
			cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
			require.NoError(t, err)
			var once sync.Once
			var injectErr error
			cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
				return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
					resp, err := rt.RoundTrip(req)
					if req.Method == http.MethodGet && strings.HasSuffix(req.URL.Path, "/pods/"+tc.pod) {
						once.Do(func() {
							patch := []byte(`{"metadata":{"annotations":{"gpuvc.dev/gpu-uuid":"` + tc.theirs + `"}}}`)
							_, injectErr = cp.Client.CoreV1().Pods(ns).Patch(ctx, tc.pod, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: "gpuvc-share"})
						})
					}
					return resp, err
				})
			})
			client, err := kubernetes.NewForConfig(cfg)
			require.NoError(t, err)
			err = reserve.Annotate(ctx, client, ns, tc.pod, tc.mine)
			require.NoError(t, injectErr)
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
			} else {
				require.NoError(t, err)
			}
			got, err := cp.Client.CoreV1().Pods(ns).Get(ctx, tc.pod, metav1.GetOptions{})
			require.NoError(t, err)
			require.Equal(t, tc.theirs, got.Annotations[contract.AnnotationGPUUUID])
			for _, mf := range got.ManagedFields {
				require.NotEqual(t, reserve.FieldManager, mf.Manager, "the stale patch was applied")
			}
		})
	}
}

// The whole simulated path: `gpuvc agent --simulate --device-plugin` publishes
// the inventory and registers with a (fake) kubelet; the kubelet allocates one
// GPU to a reservation pod, whose `gpuvc reserve --simulate` records exactly
// that GPU — one of the UUIDs the agent published on the node.
func TestSimulatedNodeEndToEnd(t *testing.T) {
	cp := localcp.ForTest(t)
	ctx := poll.TestContext(t)
	const name, nodeName = "gpuvc-gpu-2", "h100-0"
	ns, reserveKubeconfig, _ := reservationNamespace(ctx, t, cp, "reserve-e2e")
	reservationPod(ctx, t, cp.Client, ns, name, nodeName)

	dir, err := os.MkdirTemp("", "gpuvc-dp-") // short: unix socket paths are limited
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	kubelet, err := fakekubelet.Start(dir)
	require.NoError(t, err)
	t.Cleanup(kubelet.Stop)

	var agentOut lockedBuffer
	agent := agentcmd.NewCommand(cli.Streams{Out: &agentOut, ErrOut: &agentOut}, &cli.Globals{Kubeconfig: cp.Kubeconfig})
	agent.SetArgs([]string{"--node-name=" + nodeName, "--simulate=product=NVIDIA-H100-80GB-HBM3,count=8",
		"--device-plugin", "--device-plugin-dir=" + dir, "--interval=1h"})
	agentCtx, stopAgent := context.WithCancel(ctx)
	defer stopAgent()
	start := time.Now()
	agentDone := runCommand(agentCtx, agent)

	regCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	regs, err := kubelet.WaitRegistrations(regCtx, "nvidia.com/gpu")
	require.NoError(t, err, "agent output:\n%s", agentOut.String())
	t.Logf("device plugin registered %v after start", time.Since(start).Round(time.Millisecond))
	plugin, conn, err := kubelet.Dial(regs["nvidia.com/gpu"].Endpoint)
	require.NoError(t, err)
	defer conn.Close()
	stream, err := plugin.ListAndWatch(ctx, &pluginapi.Empty{})
	require.NoError(t, err)
	list, err := stream.Recv()
	require.NoError(t, err)
	require.Len(t, list.Devices, 8)
	chosen := list.Devices[5].ID
	alloc, err := plugin.Allocate(ctx, &pluginapi.AllocateRequest{ContainerRequests: []*pluginapi.ContainerAllocateRequest{{DevicesIds: []string{chosen}}}})
	require.NoError(t, err)
	env := alloc.ContainerResponses[0].Envs

	// The agent published the same GPUs on the node.
	var published []string
	require.Eventually(t, func() bool {
		node, err := cp.Client.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
		if err != nil {
			return false
		}
		var inv inventory.Inventory
		if json.Unmarshal([]byte(node.Annotations[contract.AnnotationGPUInventory]), &inv) != nil {
			return false
		}
		published = published[:0]
		for _, g := range inv.GPUs {
			published = append(published, g.UUID)
		}
		return len(published) == 8
	}, 30*time.Second, 50*time.Millisecond, "the agent never published the inventory")
	require.True(t, slices.Contains(published, chosen), "allocated %s is not among the published GPUs %v", chosen, published)

	// The kubelet would start the container with this environment.
	t.Setenv(reserve.PodNameEnv, name)
	t.Setenv(reserve.PodNamespaceEnv, ns)
	for k, v := range env {
		t.Setenv(k, v)
	}
	var reserveOut lockedBuffer
	rc := reservecmd.NewCommand(cli.Streams{Out: &reserveOut, ErrOut: &reserveOut}, &cli.Globals{Kubeconfig: reserveKubeconfig})
	// The default command, as reservation pods run it: without a driver it
	// takes the simulated GPU the device plugin allocated.
	args := []string{}
	if nvml.Init() == nvml.SUCCESS { // a real driver would answer instead
		nvml.Shutdown()
		args = []string{"--simulate"}
	}
	rc.SetArgs(args)
	reserveCtx, stopReserve := context.WithCancel(ctx)
	defer stopReserve()
	reserveDone := runCommand(reserveCtx, rc)
	waitAnnotation(ctx, t, cp.Client, ns, name, chosen, reserveDone)
	waitHolding(t, &reserveOut, reserveDone)

	stopReserve()
	waitExit(t, reserveDone, "gpuvc reserve")
	stopAgent()
	waitExit(t, agentDone, "gpuvc agent")
	_, err = os.Stat(filepath.Join(dir, regs["nvidia.com/gpu"].Endpoint))
	require.True(t, os.IsNotExist(err), "the device plugin left its socket behind")
}
