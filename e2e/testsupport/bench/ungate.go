package bench

import (
	"context"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/gpuvc/gpuvc/api/contract"
)

// UngateWatch records when each share pod of a namespace is first seen
// without its gate, through a watch on the real API server.
type UngateWatch = FirstSeen

// FirstSeen records when a watch first delivered each name it looks for.
type FirstSeen struct {
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
	return watchFirst(w, func(o runtime.Object) string {
		if p, ok := o.(*corev1.Pod); ok && !Gated(p) {
			return p.Name
		}
		return ""
	})
}

// WatchShareConfigMaps records when each share pod's ConfigMap (written by
// the share controller before it lifts the gate) is first seen, by the UID of
// the pod that owns it: a pod of an earlier run with the same name, whose
// ConfigMap the garbage collector has not removed yet, does not count.
func (tm Team) WatchShareConfigMaps(ctx context.Context, tb testing.TB) *FirstSeen {
	tb.Helper()
	w, err := tm.Client.CoreV1().ConfigMaps(tm.Namespace).Watch(ctx, metav1.ListOptions{LabelSelector: contract.LabelSharePod})
	if err != nil {
		tb.Fatal(err)
	}
	return watchFirst(w, func(o runtime.Object) string {
		if cm, ok := o.(*corev1.ConfigMap); ok && len(cm.OwnerReferences) > 0 {
			return string(cm.OwnerReferences[0].UID)
		}
		return ""
	})
}

// watchFirst records the first time w delivers an object, added or
// modified, that name names ("" for none).
func watchFirst(w watch.Interface, name func(runtime.Object) string) *FirstSeen {
	u := &FirstSeen{at: map[string]time.Time{}, waiters: map[string]chan time.Time{}, stop: w.Stop}
	go func() {
		for ev := range w.ResultChan() {
			if ev.Type != watch.Added && ev.Type != watch.Modified {
				continue
			}
			if n := name(ev.Object); n != "" {
				u.seen(n, time.Now())
			}
		}
	}()
	return u
}

func (u *FirstSeen) seen(name string, now time.Time) {
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

// Wait returns when name was first seen, waiting for it if need be.
func (u *FirstSeen) Wait(ctx context.Context, tb testing.TB, name string) time.Time {
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
		tb.Fatalf("%s never seen: %v", name, ctx.Err())
		return time.Time{}
	}
}

// Stop ends the watch.
func (u *FirstSeen) Stop() { u.stop() }
