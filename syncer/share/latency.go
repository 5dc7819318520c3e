package share

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gpuvc/gpuvc/api/contract"
)

// Gate-to-ungate latency. creationTimestamp has a resolution of one second, so
// the start is the moment the watch first delivered the pod when that is within
// two seconds of its creation timestamp (watch delivery takes milliseconds);
// otherwise (the pod was created before this process started) the creation
// timestamp.

// seen notes when the watch first delivered a pod.
func (c *Controller) seen(namespace string, uid types.UID) {
	now := c.opts.Clock.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	m := c.firstSeen[namespace]
	if m == nil {
		m = map[types.UID]time.Time{}
		c.firstSeen[namespace] = m
	}
	if _, ok := m[uid]; !ok {
		m[uid] = now
	}
}

// keepSeen forgets pods of namespace not in keep, unless just seen: the watch
// may deliver a pod before the API server lists it to a reconcile already
// running.
func (c *Controller) keepSeen(namespace string, keep map[types.UID]bool) {
	now := c.opts.Clock.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	for uid, t := range c.firstSeen[namespace] {
		if !keep[uid] && now.Sub(t) > time.Minute {
			delete(c.firstSeen[namespace], uid)
		}
	}
}

func (c *Controller) observeLatency(p *corev1.Pod) {
	if c.opts.Metrics == nil {
		return
	}
	start := p.CreationTimestamp.Time
	c.mu.Lock()
	if t, ok := c.firstSeen[p.Namespace][p.UID]; ok && !t.Before(start) && t.Sub(start) < 2*time.Second {
		start = t
	}
	delete(c.firstSeen[p.Namespace], p.UID)
	c.mu.Unlock()
	c.opts.Metrics.UngateLatency.WithLabelValues(p.Labels[contract.LabelTeam]).Observe(c.opts.Clock.Now().Sub(start).Seconds())
}
