package integration

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/gpuvc/gpuvc/api/contract"
	"github.com/gpuvc/gpuvc/e2e/localcp"
	"github.com/gpuvc/gpuvc/e2e/testsupport/bench"
	"github.com/gpuvc/gpuvc/e2e/testsupport/poll"
	"github.com/gpuvc/gpuvc/e2e/testsupport/testobj"
	"github.com/gpuvc/gpuvc/syncer/share"
)

// Fractions end to end from the tenant's virtual pods: vCluster's own
// translation creates the host pods, gpuvc's webhook gates them, the share
// controller holds GPUs with reservation pods and binds the pods, the real
// scheduler places everything on kwok GPU nodes. Three 0.3 pods share one
// reservation, a fourth gets a second, a gpu-memory pod fills the room left on
// it; the reservations go once the pods are gone.
func TestVClusterFractionsShareReservations(t *testing.T) {
	localcp.ForTest(t)
	ctx := poll.TestContext(t)
	startShareController(ctx, t)
	src := newVClusterSource(t, "fraud", gpuvcValues)
	team := bench.Team{Client: env.cp.Client, Namespace: src.HostNamespace(), MaxPodsPerGPU: share.DefaultMaxPodsPerGPU}

	create := func(virtual *corev1.Pod) *corev1.Pod {
		t.Helper()
		host, err := createVia(ctx, t, src, virtual)
		if err != nil {
			t.Fatal(err)
		}
		if !hasGate(host) {
			t.Fatalf("host pod %s created without the share gate", host.Name)
		}
		return host
	}
	served := func(host *corev1.Pod) *corev1.Pod {
		t.Helper()
		return poll.Pod(ctx, t, env.cp.Client, host.Namespace, host.Name, func(p *corev1.Pod) bool { return !hasGate(p) && running(p) })
	}
	var hosts []*corev1.Pod
	for i := range 3 {
		hosts = append(hosts, create(testobj.Pod(fmt.Sprintf("vc-third-%d", i), "default").GPUFraction("0.3").Obj()))
	}
	var groups []string
	for i, h := range hosts {
		hosts[i] = served(h)
		groups = append(groups, hosts[i].Labels[contract.LabelShareGroup])
	}
	if groups[0] == "" || groups[1] != groups[0] || groups[2] != groups[0] {
		t.Fatalf("three 0.3 pods on reservations %v, want one shared", groups)
	}
	fourth := served(create(testobj.Pod("vc-third-3", "default").GPUFraction("0.3").Obj()))
	second := fourth.Labels[contract.LabelShareGroup]
	if second == "" || second == groups[0] {
		t.Fatalf("the fourth 0.3 pod is on reservation %q, want a second one besides %s", second, groups[0])
	}
	// 20000 MiB of an 81920 MiB A100 is 0.25: no room beside the three, room
	// beside the fourth.
	memory := served(create(testobj.Pod("vc-memory", "default").GPUMemory("20000").Obj()))
	if got := memory.Labels[contract.LabelShareGroup]; got != second {
		t.Errorf("the gpu-memory pod is on reservation %q, want %s", got, second)
	}
	if res := team.Reservations(ctx, t); len(res) != 2 {
		t.Errorf("%d reservations, want 2", len(res))
	}
	team.CheckInvariants(ctx, t)
	for _, p := range append(hosts, fourth, memory) {
		if !strings.HasPrefix(p.Spec.NodeName, "a100") {
			t.Errorf("pod %s runs on %q, outside pool a100", p.Name, p.Spec.NodeName)
		}
	}
	// The pods go (the tenant deletes them; vCluster deletes the host pods):
	// the controller collects both reservations.
	team.Clean(t)
}

// startShareController runs the share controller for one test, in its own
// controller-runtime manager, as gpuvc's manager identity (a trusted user of
// the webhook) with exactly share.RBACRules.
func startShareController(ctx context.Context, t *testing.T) {
	t.Helper()
	grantShareRules(ctx, t)
	mgr, err := ctrl.NewManager(impersonateConfig(env.cp.Config, shareController), ctrl.Options{
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Controller:             config.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		t.Fatal(err)
	}
	c, err := share.New(share.Options{
		Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Recorder: mgr.GetEventRecorder("gpuvc-share"),
		Image: "registry.invalid/gpuvc/gpuvc:test", EmptyGrace: time.Second,
	})
	if err == nil {
		err = c.SetupWithManager(mgr)
	}
	if err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(runCtx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("share controller: %v", err)
		}
	})
}

func grantShareRules(ctx context.Context, t *testing.T) {
	t.Helper()
	const name = "gpuvc-share-controller-rules"
	rbac := env.cp.Client.RbacV1()
	if _, err := rbac.ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: share.RBACRules()},
		metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	if _, err := rbac.ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: shareController}},
	}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}
