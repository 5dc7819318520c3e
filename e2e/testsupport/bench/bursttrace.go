package bench

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/gpuvc/gpuvc/api/contract"
)

// BurstTrace watches every pod of a team namespace during a burst and records
// when each reservation was first seen, first seen bound to a node by the
// scheduler, and first seen with its GPU's UUID, and when each share pod was
// first seen ungated and on which reservation: where a burst's time goes.
type BurstTrace struct {
	mu   sync.Mutex
	res  map[string]*resTimes
	pods map[string]podTimes
	stop func()
}

type resTimes struct{ seen, scheduled, uuid time.Time }

type podTimes struct {
	ungated time.Time
	group   string
}

// TraceBurst starts the watch; Stop ends it.
func (tm Team) TraceBurst(ctx context.Context, tb testing.TB) *BurstTrace {
	tb.Helper()
	w, err := tm.Client.CoreV1().Pods(tm.Namespace).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		tb.Fatal(err)
	}
	t := &BurstTrace{res: map[string]*resTimes{}, pods: map[string]podTimes{}, stop: w.Stop}
	go func() {
		for ev := range w.ResultChan() {
			p, ok := ev.Object.(*corev1.Pod)
			if !ok || (ev.Type != watch.Added && ev.Type != watch.Modified) {
				continue
			}
			t.observe(p, time.Now())
		}
	}()
	return t
}

func (t *BurstTrace) observe(p *corev1.Pod, now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	switch {
	case p.Labels[contract.LabelRole] == contract.RoleReservation:
		r := t.res[p.Name]
		if r == nil {
			r = &resTimes{seen: now}
			t.res[p.Name] = r
		}
		if r.scheduled.IsZero() && p.Spec.NodeName != "" {
			r.scheduled = now
		}
		if r.uuid.IsZero() && p.Annotations[contract.AnnotationGPUUUID] != "" {
			r.uuid = now
		}
	case p.Labels[contract.LabelGPUShare] == "true" && !Gated(p):
		if _, done := t.pods[p.Name]; !done {
			t.pods[p.Name] = podTimes{ungated: now, group: p.Labels[contract.LabelShareGroup]}
		}
	}
}

// Stop ends the watch.
func (t *BurstTrace) Stop() { t.stop() }

// BurstSteps is one burst's timeline, in milliseconds from its start (the
// first create sent), and per pod: how long it waited after its create was
// answered for its reservation to be ready (scheduled and its UUID known),
// and after both for its gate to go (the share controller's reconcile and
// binding).
type BurstSteps struct {
	LastCreated, FirstReservation, LastScheduled, LastReady, LastUngated float64
	// Scheduling: per reservation, seen → bound to a node; Reporting: bound →
	// UUID seen.
	Scheduling, Reporting []time.Duration
	// ForReservation: per pod, its create answered → its reservation ready
	// (0 when it was ready before); AfterReady: the later of the two → gate
	// seen gone.
	ForReservation, AfterReady []time.Duration
}

// Steps computes the timeline of the pods in created (create sent) and
// answered (create answered), all of which must have been seen ungated.
func (t *BurstTrace) Steps(start time.Time, names []string, answered []time.Time) BurstSteps {
	t.mu.Lock()
	defer t.mu.Unlock()
	ms := func(at time.Time) float64 { return float64(at.Sub(start).Microseconds()) / 1000 }
	var s BurstSteps
	used := map[string]bool{}
	for j, name := range names {
		p := t.pods[name]
		used[p.group] = true
		s.LastCreated = max(s.LastCreated, ms(answered[j]))
		s.LastUngated = max(s.LastUngated, ms(p.ungated))
		ready := answered[j]
		if r := t.res[p.group]; r != nil && !r.uuid.IsZero() && r.uuid.After(ready) {
			ready = r.uuid
		}
		s.ForReservation = append(s.ForReservation, ready.Sub(answered[j]))
		s.AfterReady = append(s.AfterReady, p.ungated.Sub(ready))
	}
	first := true
	for name, r := range t.res {
		if !used[name] || r.scheduled.IsZero() || r.uuid.IsZero() {
			continue
		}
		if first || ms(r.seen) < s.FirstReservation {
			s.FirstReservation, first = ms(r.seen), false
		}
		s.LastScheduled = max(s.LastScheduled, ms(r.scheduled))
		s.LastReady = max(s.LastReady, ms(r.uuid))
		s.Scheduling = append(s.Scheduling, r.scheduled.Sub(r.seen))
		s.Reporting = append(s.Reporting, r.uuid.Sub(r.scheduled))
	}
	return s
}

// String is the timeline for a test log.
func (s BurstSteps) String() string {
	p50 := func(d []time.Duration) float64 {
		if len(d) == 0 {
			return 0
		}
		return Percentile(d, 0.5)
	}
	return fmt.Sprintf("last create answered %.0f ms; reservations: first seen %.0f ms, last scheduled %.0f ms, last with its UUID %.0f ms (seen → scheduled p50 %.0f ms, max %.0f; scheduled → UUID p50 %.0f ms); last gate gone %.0f ms; per pod, create answered → reservation ready p50 %.0f ms, ready → gate gone p50 %.0f ms",
		s.LastCreated, s.FirstReservation, s.LastScheduled, s.LastReady, p50(s.Scheduling), float64(slices.Max(append(s.Scheduling, 0)).Microseconds())/1000,
		p50(s.Reporting), s.LastUngated, p50(s.ForReservation), p50(s.AfterReady))
}
