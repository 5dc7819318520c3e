package teamevents

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	gpuvcv1 "github.com/gpuvc/gpuvc/api/v1alpha1"
)

// fakeCluster stands in for a team's virtual cluster: serving or not (asleep),
// and failing writes on demand.
type fakeCluster struct {
	serving  bool
	failing  bool
	connects int
	written  []*corev1.Event
}

func (f *fakeCluster) Create(_ context.Context, ev *corev1.Event) error {
	if f.failing {
		return errors.New("connection reset")
	}
	f.written = append(f.written, ev)
	return nil
}

func (f *fakeCluster) Close() {}

func newTestRecorder(f *fakeCluster, clk *clocktesting.FakeClock, held int) *Recorder {
	r := New(nil, Options{Clock: clk, Held: held})
	r.connect = func(context.Context, string, string) (sink, error) {
		f.connects++
		if !f.serving {
			return nil, nil
		}
		return f, nil
	}
	return r
}

func reasons(evs []*corev1.Event) []string {
	var out []string
	for _, e := range evs {
		out = append(out, e.Reason)
	}
	return out
}

func team(name string) *gpuvcv1.Team {
	return &gpuvcv1.Team{ObjectMeta: metav1.ObjectMeta{Name: name}}
}

func TestRecordWritesAtOnceOnTheVirtualDefaultNamespace(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 11, 28, 14, 0, 0, 0, time.UTC))
	f := &fakeCluster{serving: true}
	r := newTestRecorder(f, clk, 0)
	r.Record(context.Background(), team("a"), corev1.EventTypeNormal, "Drowsy", "Route", "no activity for 25m")
	r.Record(context.Background(), team("a"), corev1.EventTypeWarning, "SleepRefused", "Request", "2 team pods run")
	require.Equal(t, []string{"Drowsy", "SleepRefused"}, reasons(f.written))
	ev := f.written[0]
	require.Equal(t, Namespace, ev.Namespace)
	require.Equal(t, corev1.ObjectReference{APIVersion: "v1", Kind: "Namespace", Name: Namespace}, ev.InvolvedObject)
	require.Equal(t, Component, ev.Source.Component)
	require.Equal(t, clk.Now(), ev.FirstTimestamp.Time)
	require.NotEqual(t, f.written[0].Name, f.written[1].Name, "the clock stood still; the names must still differ")
	require.Zero(t, r.Held("a"))
}

func TestNothingIsWrittenWhileAsleepAndHeldEventsComeFirstOnWake(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 11, 28, 14, 0, 0, 0, time.UTC))
	f := &fakeCluster{serving: false}
	r := newTestRecorder(f, clk, 0)
	ctx := context.Background()
	decided := clk.Now()
	r.Record(ctx, team("a"), corev1.EventTypeNormal, "Waking", "Wake", "a connection arrived")
	clk.Step(time.Minute)
	r.Record(ctx, team("a"), corev1.EventTypeNormal, "QuotaChanged", "Quota", "nvidia.com/gpu 2 → 4")
	r.Flush(ctx, team("a"))
	require.Empty(t, f.written, "a sleeping control plane gets no request")
	require.Equal(t, 2, r.Held("a"))

	f.serving = true
	r.Record(ctx, team("a"), corev1.EventTypeNormal, "Awake", "Wake", "woken in 4s")
	require.Equal(t, []string{"Waking", "QuotaChanged", "Awake"}, reasons(f.written))
	require.Equal(t, decided, f.written[0].FirstTimestamp.Time, "a held event keeps the time it was decided")
	require.Zero(t, r.Held("a"))
}

func TestFlushWithNothingHeldMakesNoRequest(t *testing.T) {
	f := &fakeCluster{serving: true}
	r := newTestRecorder(f, clocktesting.NewFakeClock(time.Now()), 0)
	r.Flush(context.Background(), team("a"))
	require.Zero(t, f.connects)
}

func TestAFailedWriteIsHeldInOrderAndRetriedAfterABackOff(t *testing.T) {
	f := &fakeCluster{serving: true, failing: true}
	clk := clocktesting.NewFakeClock(time.Now())
	r := newTestRecorder(f, clk, 0)
	ctx := context.Background()
	r.Record(ctx, team("a"), corev1.EventTypeNormal, "Drowsy", "Route", "m")
	r.Record(ctx, team("a"), corev1.EventTypeNormal, "Asleep", "Sleep", "m")
	require.Equal(t, 2, r.Held("a"))
	require.Equal(t, 1, f.connects, "the second event waits for the back-off, it does not try again at once")
	f.failing = false
	r.Flush(ctx, team("a"))
	require.Empty(t, f.written, "still backing off")
	clk.Step(5 * time.Second)
	r.Flush(ctx, team("a"))
	require.Equal(t, []string{"Drowsy", "Asleep"}, reasons(f.written))
}

func TestBackOffDoublesUpToFiveMinutes(t *testing.T) {
	f := &fakeCluster{serving: true, failing: true}
	clk := clocktesting.NewFakeClock(time.Now())
	r := newTestRecorder(f, clk, 0)
	r.Record(context.Background(), team("a"), corev1.EventTypeNormal, "Drowsy", "Route", "m")
	var waits []time.Duration
	for range 9 {
		h, _ := r.heldOf(team("a"))
		waits = append(waits, h.retryAt.Sub(clk.Now()))
		clk.SetTime(h.retryAt)
		r.Flush(context.Background(), team("a"))
	}
	require.Equal(t, []time.Duration{5 * time.Second, 10 * time.Second, 20 * time.Second, 40 * time.Second, 80 * time.Second,
		160 * time.Second, 5 * time.Minute, 5 * time.Minute, 5 * time.Minute}, waits)
}

func TestHeldEventsAreBoundedOldestDroppedFirst(t *testing.T) {
	f := &fakeCluster{}
	r := newTestRecorder(f, clocktesting.NewFakeClock(time.Now()), 2)
	ctx := context.Background()
	for _, reason := range []string{"One", "Two", "Three"} {
		r.Record(ctx, team("a"), corev1.EventTypeNormal, reason, "Test", "m")
	}
	require.Equal(t, 2, r.Held("a"))
	f.serving = true
	r.Flush(ctx, team("a"))
	require.Equal(t, []string{"Two", "Three"}, reasons(f.written))
}

func TestTeamsAreHeldApart(t *testing.T) {
	f := &fakeCluster{}
	r := newTestRecorder(f, clocktesting.NewFakeClock(time.Now()), 0)
	ctx := context.Background()
	r.Record(ctx, team("a"), corev1.EventTypeNormal, "Asleep", "Sleep", "m")
	r.Record(ctx, team("b"), corev1.EventTypeNormal, "QuotaChanged", "Quota", "m")
	r.Forget("b")
	require.Equal(t, 1, r.Held("a"))
	require.Zero(t, r.Held("b"))
}

func TestANilRecorderRecordsNothing(t *testing.T) {
	var r *Recorder
	r.Record(context.Background(), team("a"), corev1.EventTypeNormal, "Asleep", "Sleep", "m")
	r.Flush(context.Background(), team("a"))
	r.Forget("a")
}
