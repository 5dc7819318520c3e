package teampolicy

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/gpuvc/gpuvc/api/contract"
	gpuvcv1 "github.com/gpuvc/gpuvc/api/v1alpha1"
	"github.com/gpuvc/gpuvc/e2e/testsupport/testobj"
	"github.com/gpuvc/gpuvc/syncer"
	"github.com/gpuvc/gpuvc/syncer/share"
)

func node(name, pool, product, memory string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
		contract.LabelPool: pool, "nvidia.com/gpu.product": product, "nvidia.com/gpu.memory": memory,
	}}}
}

func ns(name string, labels map[string]string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
}

// A fake client is enough here: this is a pure mapping from objects to a policy;
// the webhook's integration tests run it against the real API server.
func source(objs ...client.Object) Source {
	s := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(s)
	_ = gpuvcv1.AddToScheme(s)
	return Source{Reader: fake.NewClientBuilder().WithScheme(s).WithObjects(objs...).Build(), SystemPool: "system"}
}

func TestTeamPolicyFromTeam(t *testing.T) {
	fraud := testobj.Team("fraud", "a100").GPUs(4).MIG("3g.40gb", 2).MIG("1g.10gb", 4).MaxGPUsPerPod(2).Fractions().Obj()
	src := source(fraud,
		ns("team-fraud", map[string]string{contract.LabelTeam: "fraud"}),
		node("a100-0", "a100", "NVIDIA-A100-SXM4-80GB", "81920"),
		node("a100-1", "a100", "NVIDIA-A100-SXM4-80GB", "81920"),
		node("a100-old", "a100", "NVIDIA-A100-SXM4-40GB", "40960"),
		node("h100-0", "h100", "NVIDIA-H100-80GB-HBM3", "81559"),
	)
	got, err := src.TeamPolicy(context.Background(), "team-fraud")
	if err != nil {
		t.Fatal(err)
	}
	want := &syncer.TeamPolicy{
		Team: "fraud", Namespace: "team-fraud", Pool: "a100",
		PoolGPUProduct: "NVIDIA-A100-SXM4-80GB", PoolGPUMemoryMiB: 81920, SystemPool: "system",
		MaxGPUsPerPod: 2, AllowedMIGProfiles: []string{"1g.10gb", "3g.40gb"}, FractionsEnabled: true,
		VClusterName: "fraud",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("policy (-want +got):\n%s", diff)
	}
}

func TestMaxGPUsPerPodDefaults(t *testing.T) {
	cases := map[string]struct {
		team *gpuvcv1.Team
		want int64
	}{
		"explicit":        {testobj.Team("a", "p").GPUs(8).MaxGPUsPerPod(3).Obj(), 3},
		"quota bounds it": {testobj.Team("a", "p").GPUs(4).MIG("1g.10gb", 2).Obj(), 6},
		"no GPU quota":    {testobj.Team("a", "p").Obj(), gpuvcv1.UnlimitedGPUsPerPod},
		"zero GPU quota":  {testobj.Team("a", "p").GPUs(0).Obj(), 0},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := tc.team.EffectiveMaxGPUsPerPod(); got != tc.want {
				t.Errorf("got %d, want %d", got, tc.want)
			}
		})
	}
}

func TestNamespacesThatAreNotTeams(t *testing.T) {
	src := source(
		ns("default", nil),
		ns("team-ghost", map[string]string{contract.LabelTeam: "ghost"}),
		ns("team-forged", map[string]string{contract.LabelTeam: "fraud"}),
		testobj.Team("fraud", "a100").Obj(),
	)
	ctx := context.Background()
	for _, n := range []string{"default", "missing"} {
		if _, err := src.TeamPolicy(ctx, n); !errors.Is(err, syncer.ErrNotTeamNamespace) {
			t.Errorf("%s: got %v, want ErrNotTeamNamespace", n, err)
		}
	}
	// Labelled namespaces fail closed: a missing Team, or a label naming a Team
	// that lives elsewhere, is an error (pods refused), not "not a team".
	for _, n := range []string{"team-ghost", "team-forged"} {
		_, err := src.TeamPolicy(ctx, n)
		if err == nil || errors.Is(err, syncer.ErrNotTeamNamespace) {
			t.Errorf("%s: got %v, want a refusing error", n, err)
		}
	}
}

func TestShareTeam(t *testing.T) {
	fraud := testobj.Team("fraud", "a100").GPUs(2).Fractions().Obj()
	fraud.Spec.GPUSharing.MaxPodsPerSharedGPU = 4
	src := source(fraud, ns("team-fraud", map[string]string{contract.LabelTeam: "fraud"}), ns("default", nil))
	got, err := src.ShareTeam(context.Background(), "team-fraud")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(share.Team{Name: "fraud", Pool: "a100", MaxPodsPerGPU: 4}, got); diff != "" {
		t.Errorf("share team (-want +got):\n%s", diff)
	}
	if _, err := src.ShareTeam(context.Background(), "default"); !errors.Is(err, share.ErrNotTeamNamespace) {
		t.Errorf("default: got %v, want share.ErrNotTeamNamespace", err)
	}
}

// Fraction limits reach the share controller only when enabled; the reserve
// defaults to gpuvcv1.DefaultFractionReserveMiB.
func TestShareTeamFractionLimits(t *testing.T) {
	for name, tc := range map[string]struct {
		limits *gpuvcv1.FractionLimits
		want   *share.FractionLimits
	}{
		"none":            {nil, nil},
		"disabled":        {&gpuvcv1.FractionLimits{Enabled: false, ReserveMiB: ptr.To[int32](512)}, nil},
		"default reserve": {&gpuvcv1.FractionLimits{Enabled: true}, &share.FractionLimits{ReserveMiB: gpuvcv1.DefaultFractionReserveMiB}},
		"own reserve":     {&gpuvcv1.FractionLimits{Enabled: true, ReserveMiB: ptr.To[int32](1024)}, &share.FractionLimits{ReserveMiB: 1024}},
	} {
		t.Run(name, func(t *testing.T) {
			fraud := testobj.Team("fraud", "a100").GPUs(2).Fractions().Obj()
			fraud.Spec.GPUSharing.FractionLimits = tc.limits
			got, err := source(fraud, ns("team-fraud", map[string]string{contract.LabelTeam: "fraud"})).ShareTeam(context.Background(), "team-fraud")
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got.FractionLimits); diff != "" {
				t.Errorf("fraction limits (-want +got):\n%s", diff)
			}
		})
	}
}

// TestQueueBounds: a queueing team's policy carries its ceiling and queue depth
// per GPU resource, for the webhook's QueueFull refusal.
func TestQueueBounds(t *testing.T) {
	team := testobj.Team("q", "a100").GPUs(2).MIG("1g.10gb", 1).Borrow(1).BorrowMIG("1g.10gb", 2).MaxQueued(5).Obj()
	p := Policy(team, "", 0, "system")
	wantCeiling := map[corev1.ResourceName]int64{"nvidia.com/gpu": 3, "nvidia.com/mig-1g.10gb": 3}
	wantQueued := map[corev1.ResourceName]int64{"nvidia.com/gpu": 5, "nvidia.com/mig-1g.10gb": 3}
	if diff := cmp.Diff(wantCeiling, p.KueueCeiling); diff != "" {
		t.Errorf("ceiling (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(wantQueued, p.KueueMaxQueued); diff != "" {
		t.Errorf("queue depth (-want +got):\n%s", diff)
	}
	if plain := Policy(testobj.Team("p", "a100").GPUs(2).Obj(), "", 0, "system"); plain.KueueCeiling != nil || plain.KueueMaxQueued != nil {
		t.Errorf("a team that does not queue has queue bounds: %v, %v", plain.KueueCeiling, plain.KueueMaxQueued)
	}
}
