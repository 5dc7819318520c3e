package share

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"

	gpushare "github.com/gpuvc/gpuvc/gpu/share"
)

const quotaMessage = "no shared GPU of team %s has room for %s (%s), and holding another GPU would exceed the team's quota: %s. The pod stays gated until a shared GPU frees room or the quota grows"

// place assigns every waiting pod a share: on a held GPU with room, else on a
// new reservation. Pods are served oldest first, so under a tight quota the
// first to ask is the first to run.
func (c *Controller) place(ctx context.Context, namespace string, team Team, st *teamState, estimate int64, out *outcome) error {
	var blocked *quotaError
	wait := func(sp *sharePod, reason, format string, args ...any) {
		out.waiting = true
		eventType := corev1.EventTypeNormal
		if reason == ReasonQuotaExceeded {
			eventType = corev1.EventTypeWarning
		}
		c.event(sp.pod, nil, eventType, reason, fmt.Sprintf(format, args...))
	}
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
		switch u := st.unschedulable(); {
		case blocked != nil:
			wait(sp, ReasonQuotaExceeded, quotaMessage, team.Name, sp.req, st.summary(), blocked.detail)
			continue
		case u != nil:
			wait(sp, ReasonWaiting, "no shared GPU of team %s has room for %s (%s), and no GPU of pool %s is free for another: reservation %s is unschedulable (%s). The pod stays gated until a GPU frees",
				team.Name, sp.req, st.summary(), team.Pool, u.name, u.unschedulable)
			continue
		case sp.req.MemoryMiB > 0 && st.unknownMemory() != nil:
			wait(sp, ReasonWaiting, "%s needs the GPU's memory, which is not known yet for reservation %s (its node has no %s label or it is not scheduled yet)",
				sp.req, st.unknownMemory().name, labelGPUMemory)
			continue
		}
		if estimate > 0 {
			if _, err := sp.req.Units(estimate); err != nil {
				c.event(sp.pod, nil, corev1.EventTypeWarning, ReasonInvalid, fmt.Sprintf("gpuvc cannot serve this pod in pool %s: %v; the pod stays gated", team.Pool, err))
				continue
			}
		}
		pod, err := c.createReservation(ctx, namespace, team)
		var q *quotaError
		if errors.As(err, &q) {
			blocked = q
			wait(sp, ReasonQuotaExceeded, quotaMessage, team.Name, sp.req, st.summary(), q.detail)
			continue
		}
		if err != nil {
			return err
		}
		st.addReservation(pod, observation{estimate: estimate})
		if r, units, err = st.fit(sp, team.maxPods()); err != nil {
			wait(sp, ReasonWaiting, "reservation %s was created for %s; waiting to place it: %v", pod.Name, sp.req, err)
			continue
		}
		st.assign(sp, r, units)
	}
	return nil
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

// serve binds the gated pods of ready reservations and records new assignments
// of the others.
func (c *Controller) serve(ctx context.Context, st *teamState, out *outcome) {
	for _, r := range st.reservations {
		for _, sp := range r.shares {
			switch {
			case !sp.gated:
			case r.ready():
				c.bind(ctx, sp, out)
			case sp.fresh:
				if err := c.record(ctx, sp, false); err != nil {
					out.fail(err)
					continue
				}
				what := "to be scheduled"
				if r.node != "" {
					what = "to report its GPU (gpuvc reserve on node " + r.node + ")"
				}
				c.event(sp.pod, r.pod, corev1.EventTypeNormal, ReasonAssigned, fmt.Sprintf(
					"%s of a GPU set aside on reservation %s; waiting for it %s", share(sp), r.name, what))
			}
		}
	}
}

// bind gives sp its GPU: ConfigMap first, then the pod update that removes the
// gate.
func (c *Controller) bind(ctx context.Context, sp *sharePod, out *outcome) {
	r := sp.res
	if err := c.ensureConfigMap(ctx, sp); err != nil {
		var conflict *errConfigMapConflict
		if errors.As(err, &conflict) {
			c.event(sp.pod, nil, corev1.EventTypeWarning, ReasonConfigMapConflict, conflict.Error())
			return
		}
		out.fail(err)
		return
	}
	if err := c.record(ctx, sp, true); err != nil {
		out.fail(err)
		return
	}
	c.observeLatency(sp.pod)
	c.event(sp.pod, r.pod, corev1.EventTypeNormal, ReasonBound, fmt.Sprintf(
		"%s of GPU %s on node %s (reservation %s, %s in use by %d pods); scheduling gate removed",
		share(sp), r.uuid, r.node, r.name, portion(r.used()), len(r.shares)))
}

// share describes a pod's share: "0.3" or "40960 MiB (0.5)".
func share(sp *sharePod) string {
	if sp.req.MemoryMiB > 0 {
		return fmt.Sprintf("%d MiB (%s)", sp.req.MemoryMiB, portion(sp.units))
	}
	return portion(sp.units)
}
