package team_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/gpuvc/gpuvc/api/scheme"
	gpuvcv1 "github.com/gpuvc/gpuvc/api/v1alpha1"
	"github.com/gpuvc/gpuvc/manager/team"
)

// now is the fixture clock's time: whole seconds, as metav1.Time round-trips.
var now = time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)

const waitInterval = 7 * time.Second

// unit runs the Team reconciler against controller-runtime's fake client, a
// scripted VClusters and a fake event recorder.
type unit struct {
	r      *team.Reconciler
	c      client.Client
	vc     *fakeVClusters
	events *events.FakeRecorder
}

type unitOption func(*unitConfig)

type unitConfig struct {
	opts         team.Options
	interceptors interceptor.Funcs
}

func withOptions(o team.Options) unitOption { return func(c *unitConfig) { c.opts = o } }

func withInterceptors(f interceptor.Funcs) unitOption {
	return func(c *unitConfig) { c.interceptors = f }
}

func newUnit(t *testing.T, vc *fakeVClusters, objs []client.Object, o ...unitOption) *unit {
	t.Helper()
	cfg := unitConfig{}
	for _, f := range o {
		f(&cfg)
	}
	cfg.opts.WaitInterval = waitInterval
	c := fake.NewClientBuilder().
		WithScheme(scheme.New()).
		WithStatusSubresource(&gpuvcv1.Team{}).
		// The fake's default (client-go's schemas first) fails to apply a
		// NetworkPolicy: it adds "status": null, which that schema lacks.
		WithTypeConverters(managedfields.NewDeducedTypeConverter()).
		WithObjects(objs...).
		WithInterceptorFuncs(cfg.interceptors).
		Build()
	rec := events.NewFakeRecorder(100)
	return &unit{
		r:      team.NewReconciler(c, vc, rec, cfg.opts, team.WithClock(clocktesting.NewFakePassiveClock(now))),
		c:      c,
		vc:     vc,
		events: rec,
	}
}

func (u *unit) reconcile(t *testing.T, name string) (reconcile.Result, error) {
	t.Helper()
	return u.r.Reconcile(context.Background(), reconcile.Request{NamespacedName: ns(name)})
}

func (u *unit) team(t *testing.T, name string) *gpuvcv1.Team {
	t.Helper()
	got := &gpuvcv1.Team{}
	require.NoError(t, u.c.Get(context.Background(), ns(name), got))
	return got
}

// drain returns the events recorded since the last drain ("<type> <reason> <note>").
func (u *unit) drain() []string {
	var out []string
	for {
		select {
		case e := <-u.events.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

// cond is what a test asserts of a condition.
type cond struct {
	Status metav1.ConditionStatus
	Reason string
}

// requireConditions checks the listed conditions (nil: absent) and that every
// reported one carries the Team's generation and the fixture clock's time.
func requireConditions(t *testing.T, tm *gpuvcv1.Team, want map[string]*cond) {
	t.Helper()
	for typ, w := range want {
		got := apimeta.FindStatusCondition(tm.Status.Conditions, typ)
		if w == nil {
			require.Nil(t, got, "condition %s", typ)
			continue
		}
		require.NotNil(t, got, "condition %s not reported", typ)
		require.Equal(t, *w, cond{got.Status, got.Reason}, "condition %s: %s", typ, got.Message)
	}
	for _, c := range tm.Status.Conditions {
		require.Equal(t, tm.Generation, c.ObservedGeneration, "condition %s", c.Type)
		require.True(t, c.LastTransitionTime.Time.Equal(now), "condition %s at %v", c.Type, c.LastTransitionTime)
	}
}

func isTrue(reason string) *cond  { return &cond{metav1.ConditionTrue, reason} }
func isFalse(reason string) *cond { return &cond{metav1.ConditionFalse, reason} }
