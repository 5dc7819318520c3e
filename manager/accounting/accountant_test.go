package accounting

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/gpuvc/gpuvc/api/contract"
	gpuvcv1 "github.com/gpuvc/gpuvc/api/v1alpha1"
	"github.com/gpuvc/gpuvc/e2e/testsupport/testobj"
)

// fakeHost is a fake API with one team running a whole-GPU pod. The fake client
// supports only exact field selectors: the pod list's "bound" selector is dropped
// (TeamRates filters the same way).
func fakeHost(t *testing.T) client.Client {
	t.Helper()
	s := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(s)
	_ = gpuvcv1.AddToScheme(s)
	team := testobj.Team("ml", "a100").GPUs(2).Obj()
	team.UID = "uid-ml"
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "a100-0",
		Labels: map[string]string{contract.LabelPool: "a100", contract.LabelGPUProduct: "NVIDIA-A100-SXM4-80GB"}}}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-ml"}}
	return fake.NewClientBuilder().WithScheme(s).
		WithObjects(team, node, ns, bound(testobj.Pod("train", "team-ml").GPUs("2"), "a100-0").Obj()).
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
}

func teamStatus(t *testing.T, c client.Client) *gpuvcv1.GPUSeconds {
	t.Helper()
	tm := &gpuvcv1.Team{}
	if err := c.Get(context.Background(), client.ObjectKey{Name: "ml"}, tm); err != nil {
		t.Fatal(err)
	}
	return tm.Status.GPUSeconds
}

func TestAccountantCheckpointsAndResumes(t *testing.T) {
	ctx := context.Background()
	c := fakeHost(t)
	t0 := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakeClock(t0)
	opts := Options{Clock: clk, Interval: time.Minute, StatusInterval: time.Minute}
	a := New(c, c, opts)

	must(t, a.Sample(ctx)) // counting starts
	clk.Step(10 * time.Minute)
	must(t, a.Sample(ctx))
	whole := Key{"a100", KindWhole}
	if d := cmp.Diff(map[string]Seconds{"ml": {whole: 1200}}, a.Totals(), approx); d != "" {
		t.Errorf("totals (-want +got):\n%s", d)
	}
	want := &gpuvcv1.GPUSeconds{Since: metav1.NewTime(t0), SampledAt: metav1.NewTime(t0.Add(10 * time.Minute)),
		Total: 1200, ByKind: []gpuvcv1.KindSeconds{{Pool: "a100", Kind: KindWhole, Seconds: 1200}}}
	if d := cmp.Diff(want, teamStatus(t, c)); d != "" {
		t.Errorf("status (-want +got):\n%s", d)
	}

	// Another manager, five minutes later, continues from the checkpoint.
	clk2 := clocktesting.NewFakeClock(t0.Add(15 * time.Minute))
	a2 := New(c, c, Options{Clock: clk2, StatusInterval: time.Minute})
	must(t, a2.Sample(ctx))
	if got := a2.Totals()["ml"][whole]; got != 1800 {
		t.Errorf("after the restart: %v GPU-seconds, want 1800", got)
	}

	// The pod finishes: counted until the first sample that sees it done.
	pod := &corev1.Pod{}
	must(t, c.Get(ctx, client.ObjectKey{Namespace: "team-ml", Name: "train"}, pod))
	pod.Status.Phase = corev1.PodSucceeded
	must(t, c.Status().Update(ctx, pod))
	clk2.Step(time.Minute)
	must(t, a2.Sample(ctx))
	clk2.Step(time.Hour)
	must(t, a2.Sample(ctx))
	if got := a2.Totals()["ml"][whole]; got != 1920 {
		t.Errorf("after the pod finished: %v GPU-seconds, want 1920", got)
	}
	if s := teamStatus(t, c); s.Total != 1920 || !s.SampledAt.Equal(&metav1.Time{Time: t0.Add(16 * time.Minute)}) {
		t.Errorf("status total %d sampled at %v: want 1920, not rewritten after 10:16 while idle", s.Total, s.SampledAt)
	}

	// The Team is gone: its series goes, its ledger is kept, marked deleted, until
	// the retention has passed.
	must(t, c.Delete(ctx, &gpuvcv1.Team{ObjectMeta: metav1.ObjectMeta{Name: "ml"}}))
	clk2.Step(time.Minute)
	deleted := clk2.Now()
	must(t, a2.Sample(ctx))
	if len(a2.Totals()) != 0 {
		t.Errorf("totals of a deleted team kept: %v", a2.Totals())
	}
	rec := record(t, c, "ml", "uid-ml")
	if rec == nil || !rec.DeletedAt.Equal(deleted) || rec.Ledger.Totals[whole] != 1920 {
		t.Fatalf("record of the deleted team: %+v, want deleted at %v with 1920 GPU-seconds", rec, deleted)
	}
	clk2.Step(time.Hour)
	must(t, a2.Sample(ctx))
	if rec := record(t, c, "ml", "uid-ml"); rec == nil || !rec.DeletedAt.Equal(deleted) {
		t.Errorf("record within the retention: %+v, want kept, deleted at %v", rec, deleted)
	}
	clk2.Step(90 * 24 * time.Hour)
	must(t, a2.Sample(ctx))
	if rec := record(t, c, "ml", "uid-ml"); rec != nil {
		t.Errorf("record kept past the retention: %+v", rec)
	}
}

// record reads a team's ledger record from the default namespace; nil when none.
func record(t *testing.T, c client.Client, team string, uid types.UID) *Record {
	t.Helper()
	cm := &corev1.ConfigMap{}
	err := c.Get(context.Background(), client.ObjectKey{Namespace: DefaultNamespace, Name: LedgerName(team, uid)}, cm)
	if apierrors.IsNotFound(err) {
		return nil
	}
	must(t, err)
	r, err := DecodeRecord(cm)
	must(t, err)
	return r
}

func TestAccountantRestartsFromAnUnreadableCheckpoint(t *testing.T) {
	ctx := context.Background()
	c := fakeHost(t)
	must(t, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: DefaultNamespace}}))
	must(t, c.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: DefaultNamespace, Name: LedgerName("ml", "uid-ml"),
		Labels: map[string]string{LabelLedger: "true", contract.LabelTeam: "ml", LabelTeamUID: "uid-ml"}},
		Data: map[string]string{DataKey: "{not json"}}))
	clk := clocktesting.NewFakeClock(time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC))
	a := New(c, c, Options{Clock: clk})
	must(t, a.Sample(ctx))
	clk.Step(time.Minute)
	must(t, a.Sample(ctx))
	if got := a.Totals()["ml"][Key{"a100", KindWhole}]; got != 120 {
		t.Errorf("%v GPU-seconds, want 120 counted afresh", got)
	}
	if rec := record(t, c, "ml", "uid-ml"); rec == nil || rec.Ledger.Totals[Key{"a100", KindWhole}] != 120 {
		t.Errorf("checkpoint not rewritten: %+v", rec)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
