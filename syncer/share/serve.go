package share

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	utilrand "k8s.io/apimachinery/pkg/util/rand"

	"github.com/gpuvc/gpuvc/api/contract"
	gpushare "github.com/gpuvc/gpuvc/gpu/share"
)

const quotaMessage = "no shared GPU of team %s has room for %s (%s), and holding another GPU would exceed the team's quota: %s. The pod stays gated until a shared GPU frees room or the quota grows"

// place assigns every waiting pod a share: on a held GPU with room, else on a
// new reservation. Pods are served oldest first, so under a tight quota the
// first to ask is the first to run. New reservations are planned first and
// created together afterwards (see create).
func (c *Controller) place(ctx context.Context, namespace string, team Team, st *teamState, estimate int64, out *outcome) {
	var planned []*reservation
	for _, sp := range st.pending {
		r, units, err := st.fit(sp, team.maxPods())
		if err == nil {
			st.assign(sp, r, units)
			continue
		}
		if !errors.Is(err, gpushare.ErrNoFit) {
			c.event(sp.pod, nil, corev1.EventTypeWarning, ReasonInvalid, fmt.Sprintf("gpuvc cannot serve %s: %v; the pod stays gated", sp.req, err))
			continue
		}
		// No held GPU has room: hold another one, if that can work.
		if u := st.unschedulable(); u != nil {
			c.wait(sp, out, ReasonWaiting, fmt.Sprintf("no shared GPU of team %s has room for %s (%s), and no GPU of pool %s is free for another: reservation %s is unschedulable (%s). The pod stays gated until a GPU frees",
				team.Name, sp.req, st.summary(), team.Pool, u.name, u.unschedulable))
			continue
		}
		if u := st.unknownMemory(); sp.req.MemoryMiB > 0 && u != nil {
			c.wait(sp, out, ReasonWaiting, fmt.Sprintf("%s needs the GPU's memory, which is not known yet for reservation %s (not scheduled yet, or its node has no %s label)",
				sp.req, u.name, contract.LabelGPUMemory))
			continue
		}
		if estimate > 0 {
			if _, err := sp.req.Units(estimate); err != nil {
				c.event(sp.pod, nil, corev1.EventTypeWarning, ReasonInvalid, fmt.Sprintf("gpuvc cannot serve this pod in pool %s: %v; the pod stays gated", team.Pool, err))
				continue
			}
		}
		r = st.addReservation(c.reservationPod(namespace, ReservationPrefix+utilrand.String(8), team), observation{estimate: estimate})
		planned = append(planned, r)
		if r, units, err = st.fit(sp, team.maxPods()); err != nil {
			c.wait(sp, out, ReasonWaiting, fmt.Sprintf("a new reservation was planned for %s; waiting to place it: %v", sp.req, err))
			continue
		}
		st.assign(sp, r, units)
	}
	c.create(ctx, namespace, team, st, planned, out)
}

// createWorkers bounds the reservations created at once. Once the quota
// refuses one, the ones not yet sent are not tried.
const createWorkers = 4

// create creates the planned reservations together (a burst needing several
// GPUs should not wait for them one by one). A reservation the API server
// refuses is dropped with its shares: those pods wait and are placed again by
// the next reconcile, oldest first. After a quota refusal see quota.go.
func (c *Controller) create(ctx context.Context, namespace string, team Team, st *teamState, planned []*reservation, out *outcome) {
	if len(planned) == 0 {
		return
	}
	quotas, err := c.quotaFingerprint(ctx, namespace)
	if err != nil {
		out.fail(err)
		quotas = ""
	}
	var blocked atomic.Pointer[quotaError]
	errs := make([]error, len(planned))
	try := func(i int) {
		if q := blocked.Load(); q != nil {
			errs[i] = q
			return
		}
		pod, err := c.createReservation(ctx, planned[i].pod)
		var q *quotaError
		if errors.As(err, &q) {
			blocked.CompareAndSwap(nil, q)
		}
		if err == nil {
			planned[i].pod = pod
		}
		errs[i] = err
	}
	first := 0
	switch last, holds, probe := c.lastBlock(namespace, quotas); {
	case holds:
		blocked.Store(last.detail)
	case probe:
		try(0) // the last attempt was refused: one alone first
		first = 1
	}
	parallel(createWorkers, len(planned)-first, func(i int) { try(first + i) })

	var waiting []*sharePod
	for i, r := range planned {
		if errs[i] != nil {
			waiting = append(waiting, st.drop(r)...)
		}
	}
	for _, err := range errs {
		if q := (*quotaError)(nil); err != nil && !errors.As(err, &q) {
			out.fail(err) // retried with backoff; the pods wait meanwhile
		}
	}
	q := blocked.Load()
	if q == nil {
		c.setBlock(namespace, nil)
	} else if _, holds, _ := c.lastBlock(namespace, quotas); !holds {
		c.setBlock(namespace, &quotaBlock{quotas: quotas, detail: q, at: c.opts.Clock.Now()})
	}
	for _, sp := range waiting {
		if q != nil {
			c.wait(sp, out, ReasonQuotaExceeded, fmt.Sprintf(quotaMessage, team.Name, sp.req, st.summary(), q.detail))
		} else {
			out.waiting = true
		}
	}
}

// wait tells a pod why it stays gated.
func (c *Controller) wait(sp *sharePod, out *outcome, reason, message string) {
	out.waiting = true
	eventType := corev1.EventTypeNormal
	if reason == ReasonQuotaExceeded {
		eventType = corev1.EventTypeWarning
	}
	c.event(sp.pod, nil, eventType, reason, message)
}

// parallel runs fn(0..n-1) on at most workers goroutines.
func parallel(workers, n int, fn func(i int)) {
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(workers, n) {
		wg.Go(func() {
			for i := range next {
				fn(i)
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
}

// unknownMemory returns an open reservation whose GPU memory is unknown.
func (st *teamState) unknownMemory() *reservation {
	for _, r := range st.reservations {
		if r.open && r.memMiB <= 0 {
			return r
		}
	}
	return nil
}

// bindWorkers bounds the pods bound at once: each bind is two API calls, and
// a burst should not wait for them one after the other.
const bindWorkers = 8

// serve binds the gated pods of ready reservations, in parallel, and tells the
// others what they wait for.
func (c *Controller) serve(ctx context.Context, st *teamState, out *outcome) {
	var ready []*sharePod
	for _, r := range st.reservations {
		for _, sp := range r.shares {
			switch {
			case !sp.gated:
			case r.ready():
				ready = append(ready, sp)
			case sp.fresh && r.node == "":
				c.event(sp.pod, nil, corev1.EventTypeNormal, ReasonAssigned, fmt.Sprintf(
					"%s of a GPU set aside; waiting for the scheduler to place its reservation pod", share(sp)))
			case sp.fresh:
				c.event(sp.pod, nil, corev1.EventTypeNormal, ReasonAssigned, fmt.Sprintf(
					"%s of a GPU set aside on node %s; waiting for the reservation pod to report its GPU (gpuvc reserve)", share(sp), r.node))
			}
		}
	}
	var mu sync.Mutex
	parallel(bindWorkers, len(ready), func(i int) {
		err := c.bind(ctx, ready[i], st.limits)
		mu.Lock()
		out.fail(err)
		mu.Unlock()
	})
}

// bind gives sp its GPU: ConfigMap first, then the pod update that removes the
// gate.
func (c *Controller) bind(ctx context.Context, sp *sharePod, limits *FractionLimits) error {
	r := sp.res
	if err := c.ensureConfigMap(ctx, sp, limits); err != nil {
		var conflict *errConfigMapConflict
		if errors.As(err, &conflict) {
			c.event(sp.pod, nil, corev1.EventTypeWarning, ReasonConfigMapConflict, conflict.Error())
			return nil
		}
		return err
	}
	if err := c.bindPod(ctx, sp); err != nil {
		return err
	}
	c.observeLatency(sp.pod)
	c.event(sp.pod, r.pod, corev1.EventTypeNormal, ReasonBound, fmt.Sprintf(
		"%s of GPU %s on node %s (reservation %s, %s in use by %d pods); scheduling gate removed",
		share(sp), r.uuid, r.node, r.name, portion(r.used()), len(r.shares)))
	return nil
}

// share describes a pod's share: "0.3" or "40960 MiB (0.5)".
func share(sp *sharePod) string {
	if sp.req.MemoryMiB > 0 {
		return fmt.Sprintf("%d MiB (%s)", sp.req.MemoryMiB, portion(sp.units))
	}
	return portion(sp.units)
}
