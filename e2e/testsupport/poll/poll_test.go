package poll

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// recorder is a testing.TB whose Fatalf records the message and stops the
// goroutine, as the real one does.
type recorder struct {
	testing.TB
	fatal string
}

func (r *recorder) Helper() {}
func (r *recorder) Fatalf(format string, args ...any) {
	r.fatal = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// run calls f with a recorder on its own goroutine and returns what it fataled with.
func run(t *testing.T, f func(tb testing.TB)) string {
	r := &recorder{TB: t}
	done := make(chan struct{})
	go func() { defer close(done); f(r) }()
	<-done
	return r.fatal
}

func TestUntil(t *testing.T) {
	ctx := context.Background()
	calls := 0
	if msg := run(t, func(tb testing.TB) {
		Until(ctx, tb, time.Second, "the third call", func(context.Context) (bool, error) { calls++; return calls == 3, nil })
	}); msg != "" || calls != 3 {
		t.Errorf("Until: fatal %q after %d calls, want none after 3", msg, calls)
	}
	msg := run(t, func(tb testing.TB) {
		Until(ctx, tb, time.Second, "a broken read", func(context.Context) (bool, error) { return false, errors.New("boom") })
	})
	if !strings.Contains(msg, "a broken read") || !strings.Contains(msg, "boom") {
		t.Errorf("Until on error: fatal %q, want what and the error", msg)
	}
}

func TestUntilSeenRetriesErrorsAndReportsTheLastSight(t *testing.T) {
	calls := 0
	msg := run(t, func(tb testing.TB) {
		UntilSeen(context.Background(), tb, 300*time.Millisecond, "a pod", func(context.Context) (bool, string, error) {
			calls++
			if calls == 1 {
				return false, "", errors.New("transient")
			}
			return false, "phase Pending", nil
		})
	})
	if calls < 2 || !strings.Contains(msg, "a pod") || !strings.Contains(msg, "last seen: phase Pending") {
		t.Errorf("after %d calls: fatal %q, want a retry and the last sight", calls, msg)
	}
}

func TestPodWaitsForCreationAndDescribesTheLastPod(t *testing.T) {
	ctx := context.Background()
	c := fake.NewClientset()
	pending := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"},
		Spec: corev1.PodSpec{SchedulingGates: []corev1.PodSchedulingGate{{Name: "gpuvc.dev/gpu-share"}}},
		Status: corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{
			{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "SchedulingGated", Message: "gated"}}}}
	go func() {
		time.Sleep(3 * Interval) // the pod appears after the first polls: Pod must wait for it
		_, _ = c.CoreV1().Pods("ns").Create(ctx, pending, metav1.CreateOptions{})
	}()
	var got *corev1.Pod
	if msg := run(t, func(tb testing.TB) {
		got = Pod(ctx, tb, c, "ns", "p", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodPending })
	}); msg != "" || got == nil {
		t.Fatalf("Pod: fatal %q, pod %v", msg, got)
	}
	want := `phase Pending, node "", gates [{gpuvc.dev/gpu-share}], PodScheduled=False SchedulingGated: gated`
	if d := DescribePod(got); d != want {
		t.Errorf("DescribePod = %q, want %q", d, want)
	}
}
