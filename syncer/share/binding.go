package share

import (
	"context"
	"errors"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Binds run after the reconcile that decided them has returned, so a team's
// next reconcile — a reservation just scheduled that needs its UUID, pods that
// need another reservation — does not wait for the writes of the last one. A
// burst's trace showed why: each reconcile spent 200–600 ms binding a dozen
// pods (a ConfigMap create and a pod patch through both webhooks each) while
// the next reservation's update waited in the queue behind it
// (docs/benchmarks.md, "Share-pod burst").
//
// Safety: a bind under way is remembered (inflight) before the reconcile that
// started it returns, and every later reconcile counts it as held on its
// reservation, whatever its LIST says, until a LIST shows the pod ungated or
// gone after the bind finished: a pod is never placed twice and no GPU takes
// more than its room. A failed bind is forgotten and its team reconciled
// again, with backoff. Only one reconcile of a team runs at a time (the work
// queue's guarantee), so nothing else adds binds for it meanwhile.

// inflight is a bind started for a gated pod.
type inflight struct {
	group string // the reservation
	units int
	done  bool // the gate's removal was written
}

// binder runs binds beside the reconciles. Before SetupWithManager (tests
// that call Reconcile alone) it has no queue and binds run in the reconcile.
type binder struct {
	mu       sync.Mutex
	ctx      context.Context
	queue    queue
	inflight map[string]map[types.UID]*inflight // namespace → pod → bind
	failures map[string]int                     // namespace → binds failed in a row
	slots    chan struct{}
	running  sync.WaitGroup
}

func newBinder() *binder {
	return &binder{inflight: map[string]map[types.UID]*inflight{}, failures: map[string]int{}, slots: make(chan struct{}, bindWorkers)}
}

// start is called when the controller's sources start: binds use the
// controller's context and wake teams through its queue.
func (b *binder) start(ctx context.Context, q queue) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.ctx, b.queue = ctx, q
}

// drain waits, once ctx ends, for the binds under way: the manager waits for
// it, so a stopped controller leaves no write behind (as a reconcile
// interrupted mid-bind would not).
func (b *binder) drain(ctx context.Context) error {
	<-ctx.Done()
	b.running.Wait()
	return nil
}

// held returns the binds of namespace a reconcile must count, given the pods
// its LIST showed gated: a finished bind whose pod is no longer gated (or
// gone) is forgotten, since that LIST already shows what it wrote.
func (b *binder) held(namespace string, gated map[types.UID]bool) map[types.UID]inflight {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := map[types.UID]inflight{}
	for uid, f := range b.inflight[namespace] {
		if f.done && !gated[uid] {
			delete(b.inflight[namespace], uid)
			continue
		}
		out[uid] = *f
	}
	return out
}

// bindAll binds the pods, beside the reconcile when the controller runs in a
// manager, else before returning; it returns what synchronous binds failed
// with.
func (c *Controller) bindAll(ctx context.Context, namespace string, pods []*sharePod, limits *FractionLimits) []error {
	b := c.binder
	b.mu.Lock()
	bctx, q := b.ctx, b.queue
	if q != nil {
		m := b.inflight[namespace]
		if m == nil {
			m = map[types.UID]*inflight{}
			b.inflight[namespace] = m
		}
		for _, sp := range pods {
			m[sp.pod.UID] = &inflight{group: sp.res.name, units: sp.units}
		}
	}
	b.mu.Unlock()
	if q == nil {
		var mu sync.Mutex
		var errs []error
		parallel(bindWorkers, len(pods), func(i int) {
			if err := c.bind(ctx, pods[i], limits); err != nil && !errors.Is(err, errStaysGated) {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		})
		return errs
	}
	bctx = ctrl.LoggerInto(bctx, ctrl.LoggerFrom(ctx))
	for _, sp := range pods {
		b.running.Add(1)
		go func() {
			defer b.running.Done()
			b.slots <- struct{}{}
			err := c.bind(bctx, sp, limits)
			<-b.slots
			c.bound(bctx, q, namespace, sp, err)
		}()
	}
	return nil
}

// bound records a bind's end: done, or forgotten and the team woken.
func (c *Controller) bound(ctx context.Context, q queue, namespace string, sp *sharePod, err error) {
	b := c.binder
	b.mu.Lock()
	defer b.mu.Unlock()
	if err == nil {
		if f := b.inflight[namespace][sp.pod.UID]; f != nil {
			f.done = true
		}
		delete(b.failures, namespace)
		return
	}
	delete(b.inflight[namespace], sp.pod.UID)
	if errors.Is(err, errStaysGated) || apierrors.IsNotFound(err) || ctx.Err() != nil {
		return // the pod is gone (its deletion wakes the team), or we stop
	}
	delay := 50 * time.Millisecond
	if !apierrors.IsConflict(err) {
		ctrl.LoggerFrom(ctx).Error(err, "binding share pod", "pod", sp.pod.Name)
		delay = min(delay<<min(b.failures[namespace], 10), c.opts.RetryInterval)
		b.failures[namespace]++
	}
	q.AddAfter(reconcile.Request{NamespacedName: types.NamespacedName{Name: namespace}}, delay)
}
