package accounting

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/gpuvc/gpuvc/api/contract"
	gpuvcv1 "github.com/gpuvc/gpuvc/api/v1alpha1"
	"github.com/gpuvc/gpuvc/e2e/testsupport/testobj"
)

// allocated is a claim of devices allocated and reserved for the pods.
func allocated(name string, devices int, admin bool, pods ...*corev1.Pod) resourcev1.ResourceClaim {
	c := *testobj.ClaimSpec().Devices("gpu", "gpu.nvidia.com", int64(devices)).Claim(name, "team-a")
	c.Status.Allocation = &resourcev1.AllocationResult{}
	for i := range devices {
		r := resourcev1.DeviceRequestAllocationResult{Request: "gpu", Driver: "gpu.nvidia.com", Pool: "a100-0", Device: "gpu-" + string(rune('0'+i))}
		if admin {
			r.AdminAccess = ptr.To(true)
		}
		c.Status.Allocation.Devices.Results = append(c.Status.Allocation.Devices.Results, r)
	}
	for _, p := range pods {
		c.Status.ReservedFor = append(c.Status.ReservedFor, resourcev1.ResourceClaimConsumerReference{Resource: "pods", Name: p.Name, UID: p.UID})
	}
	return c
}

func TestDRARates(t *testing.T) {
	nodes := map[string]NodeInfo{"a100-0": {Pool: "a100"}, "h100-0": {Pool: "h100"}}
	pod := func(name, node string) *corev1.Pod {
		p := bound(testobj.Pod(name, "team-a"), node).Obj()
		p.UID = types.UID("uid-" + name)
		return p
	}
	running, other, shared := pod("running", "a100-0"), pod("other", "h100-0"), pod("shared", "a100-0")
	done := pod("done", "a100-0")
	done.Status.Phase = corev1.PodSucceeded
	unbound := testobj.Pod("unbound", "team-a").Obj()
	unbound.UID = "uid-unbound"
	pods := []corev1.Pod{*running, *other, *shared, *done, *unbound}
	for name, tc := range map[string]struct {
		claims []resourcev1.ResourceClaim
		want   Rates
	}{
		"a device per GPU, in the pool of the holder's node": {claims: []resourcev1.ResourceClaim{allocated("a", 2, false, running), allocated("b", 1, false, other)},
			want: Rates{{"a100", KindWhole}: 2, {"h100", KindWhole}: 1}},
		"a claim two pods share counts once": {claims: []resourcev1.ResourceClaim{allocated("a", 1, false, running, shared)},
			want: Rates{{"a100", KindWhole}: 1}},
		"nothing for a finished or unbound pod, an unreserved or unallocated claim, admin access": {
			claims: []resourcev1.ResourceClaim{allocated("a", 1, false, done), allocated("b", 1, false, unbound), allocated("c", 1, false),
				*testobj.ClaimSpec().Devices("gpu", "gpu.nvidia.com", 1).Claim("d", "team-a"), allocated("e", 1, true, running)},
			want: Rates{}},
	} {
		t.Run(name, func(t *testing.T) {
			if d := cmp.Diff(tc.want, DRARates(pods, tc.claims, nodes, "a100")); d != "" {
				t.Errorf("rates (-want +got):\n%s", d)
			}
		})
	}
}

// The accountant reads a spec.dra team's claims: a pod holding two DRA
// devices and one whole GPU is charged three GPUs; a team without spec.dra is
// not asked for claims (its namespace may hold none).
func TestAccountantCountsDRADevices(t *testing.T) {
	ctx := context.Background()
	s := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(s)
	_ = gpuvcv1.AddToScheme(s)
	team := testobj.Team("ml", "a100").GPUs(4).DRA().Obj()
	team.UID = "uid-ml"
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "a100-0", Labels: map[string]string{contract.LabelPool: "a100"}}}
	pod := bound(testobj.Pod("train", "team-ml").GPUs("1"), "a100-0").Obj()
	pod.UID = "uid-train"
	claim := allocated("train-gpu", 2, false, pod)
	claim.Namespace = "team-ml"
	c := fake.NewClientBuilder().WithScheme(s).
		WithObjects(team, node, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-ml"}}, pod, &claim).
		WithStatusSubresource(&gpuvcv1.Team{}).
		WithInterceptorFuncs(interceptor.Funcs{List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			var kept []client.ListOption
			for _, o := range opts {
				if _, ok := o.(client.MatchingFieldsSelector); !ok {
					kept = append(kept, o)
				}
			}
			return c.List(ctx, list, kept...)
		}}).Build()
	clk := clocktesting.NewFakeClock(time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC))
	a := New(c, c, Options{Clock: clk})
	must(t, a.Sample(ctx))
	clk.Step(time.Minute)
	must(t, a.Sample(ctx))
	if got := a.Totals()["ml"][Key{"a100", KindWhole}]; got != 180 {
		t.Errorf("%v GPU-seconds, want 180 (1 whole GPU + 2 DRA devices for a minute)", got)
	}
}
