package teamqueue_test

import (
	"context"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/gpuvc/gpuvc/api/contract"
	"github.com/gpuvc/gpuvc/e2e/testsupport/poll"
)

// podClock records when a watch on a namespace's queued pods first saw each pod
// ungated, Running, and stopped (marked by Kueue, deleted, or finished): the
// benchmarks' clock, independent of how often they poll.
type podClock struct {
	mu                      sync.Mutex
	ungated, running, ended map[string]time.Time
	stop                    func()
}

func watchPodClock(ctx context.Context, tb testing.TB, ns string) *podClock {
	tb.Helper()
	w, err := host.Client.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{LabelSelector: contract.LabelKueueQueueName})
	if err != nil {
		tb.Fatal(err)
	}
	c := &podClock{ungated: map[string]time.Time{}, running: map[string]time.Time{}, ended: map[string]time.Time{}, stop: w.Stop}
	tb.Cleanup(w.Stop)
	go func() {
		for e := range w.ResultChan() {
			now := time.Now()
			p, ok := e.Object.(*corev1.Pod)
			if !ok {
				continue
			}
			c.mu.Lock()
			first := func(m map[string]time.Time) {
				if _, seen := m[p.Name]; !seen {
					m[p.Name] = now
				}
			}
			if !gated(p) {
				first(c.ungated)
			}
			if p.Status.Phase == corev1.PodRunning {
				first(c.running)
			}
			if e.Type == watch.Deleted || p.DeletionTimestamp != nil || stopped(p) ||
				p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
				first(c.ended)
			}
			c.mu.Unlock()
		}
	}()
	return c
}

// at returns when the pod was first seen in the state of m, if it was.
func (c *podClock) at(m map[string]time.Time, pod string) (time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t, ok := m[pod]
	return t, ok
}

// waitUngated waits for the watch to see the pod ungated and returns when it did.
func (c *podClock) waitUngated(ctx context.Context, tb testing.TB, pod string) time.Time {
	tb.Helper()
	var at time.Time
	poll.Until(ctx, tb, time.Minute, "pod "+pod+" ungated", func(context.Context) (bool, error) {
		t, ok := c.at(c.ungated, pod)
		at = t
		return ok, nil
	})
	return at
}
