package share

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// collect deletes reservations nobody uses: at once when the pod has finished,
// else after EmptyGrace without shares (a burst of pods reuses the GPU instead
// of waiting for quota to be handed back and taken again). Gated pods assigned
// to a reservation count as users. The grace is remembered in memory only: after
// a restart it starts again, which delays a deletion but never loses one.
//
// Share ConfigMaps need no collection: they are owned by their pod.
func (c *Controller) collect(ctx context.Context, namespace string, st *teamState, out *outcome) {
	now := c.opts.Clock.Now()
	keep := map[types.UID]bool{}
	for _, r := range st.reservations {
		if r.pod.DeletionTimestamp != nil || len(r.shares) > 0 {
			continue
		}
		if r.open {
			since := c.emptyFor(namespace, r.pod.UID, now)
			keep[r.pod.UID] = true
			if left := c.opts.EmptyGrace - now.Sub(since); left > 0 {
				out.requeueAfter(left)
				continue
			}
		}
		// Preconditions: only this pod, not a new one of the same name.
		out.fail(c.opts.Client.Delete(ctx, r.pod, client.Preconditions{UID: &r.pod.UID}))
	}
	c.mu.Lock()
	for uid := range c.emptySince[namespace] {
		if !keep[uid] {
			delete(c.emptySince[namespace], uid)
		}
	}
	c.mu.Unlock()
}

// emptyFor returns when the reservation was first seen empty.
func (c *Controller) emptyFor(namespace string, uid types.UID, now time.Time) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := c.emptySince[namespace]
	if m == nil {
		m = map[types.UID]time.Time{}
		c.emptySince[namespace] = m
	}
	if t, ok := m[uid]; ok {
		return t
	}
	m[uid] = now
	return now
}
