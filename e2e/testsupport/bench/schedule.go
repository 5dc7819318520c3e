package bench

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// BindWatch records when each pod of a namespace is first seen bound to a
// node, through a watch on the real API server: for a pod with DRA claims the
// scheduler binds only after it has allocated them.
type BindWatch struct {
	mu    sync.Mutex
	bound map[string]chan time.Time
	stop  func()
}

// WatchBinds starts watching the namespace's pods; Stop ends it.
func WatchBinds(ctx context.Context, tb testing.TB, c kubernetes.Interface, ns string) *BindWatch {
	tb.Helper()
	w, err := c.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		tb.Fatal(err)
	}
	bw := &BindWatch{bound: map[string]chan time.Time{}, stop: w.Stop}
	go func() {
		for ev := range w.ResultChan() {
			p, ok := ev.Object.(*corev1.Pod)
			if !ok || ev.Type == watch.Deleted || p.Spec.NodeName == "" {
				continue
			}
			select {
			case bw.channel(p.Name) <- time.Now():
			default: // seen bound before
			}
		}
	}()
	return bw
}

func (bw *BindWatch) channel(name string) chan time.Time {
	bw.mu.Lock()
	defer bw.mu.Unlock()
	ch := bw.bound[name]
	if ch == nil {
		ch = make(chan time.Time, 1)
		bw.bound[name] = ch
	}
	return ch
}

// Wait returns when the pod was first seen bound.
func (bw *BindWatch) Wait(ctx context.Context, tb testing.TB, name string) time.Time {
	tb.Helper()
	select {
	case t := <-bw.channel(name):
		return t
	case <-ctx.Done():
		tb.Fatalf("pod %s never bound to a node: %v", name, ctx.Err())
		return time.Time{}
	}
}

// Stop ends the watch.
func (bw *BindWatch) Stop() { bw.stop() }

// BindLatency creates pod(i) in ns and returns the time from the create call
// to the pod seen bound, then deletes it and waits until settled(ctx) says its
// resources are free again (not timed), so each sample starts from the same
// state.
func BindLatency(ctx context.Context, tb testing.TB, c kubernetes.Interface, bw *BindWatch, pod *corev1.Pod, settled func(context.Context) (bool, error)) time.Duration {
	tb.Helper()
	start := time.Now()
	if _, err := c.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		tb.Fatalf("creating pod %s/%s: %v", pod.Namespace, pod.Name, err)
	}
	d := bw.Wait(ctx, tb, pod.Name).Sub(start)
	err := c.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
	if err != nil && !apierrors.IsNotFound(err) {
		tb.Fatal(err)
	}
	gone := func(ctx context.Context) (bool, error) {
		_, err := c.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
		if !apierrors.IsNotFound(err) {
			return false, nil
		}
		if settled == nil {
			return true, nil
		}
		return settled(ctx)
	}
	if err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, time.Minute, true, gone); err != nil {
		tb.Fatalf("%s", fmt.Sprintf("pod %s/%s or what it held not gone a minute after its deletion: %v", pod.Namespace, pod.Name, err))
	}
	return d
}
