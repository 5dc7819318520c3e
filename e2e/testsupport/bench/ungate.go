package bench

import (
	"context"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/gpuvc/gpuvc/api/contract"
)

// UngateWatch records when each share pod of a namespace is first seen
// without its gate, through a watch on the real API server.
type UngateWatch struct {
	mu      sync.Mutex
	at      map[string]time.Time
	waiters map[string]chan time.Time
	stop    func()
}

// WatchUngates starts watching the team's share pods; Stop ends it.
func (tm Team) WatchUngates(ctx context.Context, tb testing.TB) *UngateWatch {
	tb.Helper()
	w, err := tm.Client.CoreV1().Pods(tm.Namespace).Watch(ctx, metav1.ListOptions{LabelSelector: contract.LabelGPUShare + "=true"})
	if err != nil {
		tb.Fatal(err)
	}
	u := &UngateWatch{at: map[string]time.Time{}, waiters: map[string]chan time.Time{}, stop: w.Stop}
	go func() {
		for ev := range w.ResultChan() {
			p, ok := ev.Object.(*corev1.Pod)
			if !ok || ev.Type == watch.Deleted || Gated(p) {
				continue
			}
			u.seen(p.Name, time.Now())
		}
	}()
	return u
}

func (u *UngateWatch) seen(name string, now time.Time) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if _, done := u.at[name]; done {
		return
	}
	u.at[name] = now
	if ch := u.waiters[name]; ch != nil {
		ch <- now
	}
}

// Wait returns when the pod was first seen ungated, waiting for it if need be.
func (u *UngateWatch) Wait(ctx context.Context, tb testing.TB, name string) time.Time {
	tb.Helper()
	u.mu.Lock()
	if t, ok := u.at[name]; ok {
		u.mu.Unlock()
		return t
	}
	ch := make(chan time.Time, 1)
	u.waiters[name] = ch
	u.mu.Unlock()
	select {
	case t := <-ch:
		return t
	case <-ctx.Done():
		tb.Fatalf("pod %s never ungated: %v", name, ctx.Err())
		return time.Time{}
	}
}

// Stop ends the watch.
func (u *UngateWatch) Stop() { u.stop() }
