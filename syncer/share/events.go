package share

import (
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Event reasons on share pods. vCluster syncs events of a host pod to the
// virtual pod, so these tell the team what happened to its pod.
const (
	// ReasonAssigned: a share of a reservation was set aside for the pod; it
	// waits for the reservation to be scheduled or to report its GPU.
	ReasonAssigned = "GPUShareAssigned"
	// ReasonBound: the pod got its GPU and its gate was removed.
	ReasonBound = "GPUShareBound"
	// ReasonQuotaExceeded: no held GPU has room and the team's quota forbids
	// holding another; the pod stays gated until room frees.
	ReasonQuotaExceeded = "GPUShareQuotaExceeded"
	// ReasonWaiting: no held GPU has room and another cannot be placed yet.
	ReasonWaiting = "GPUShareWaiting"
	// ReasonInvalid: the pod's share cannot be served as written.
	ReasonInvalid = "GPUShareInvalid"
	// ReasonConfigMapConflict: the pod's env ConfigMap exists and gpuvc did not
	// write it.
	ReasonConfigMapConflict = "GPUShareConfigMapConflict"
	// ReasonReservationLost: a running pod's reservation is gone (deleted by
	// hand or evicted); its GPU is no longer held for it.
	ReasonReservationLost = "GPUShareReservationLost"
	// ReasonGPUUnhealthy: the GPU of the pod's reservation failed (the node's
	// agent lists it unhealthy); no new share goes there.
	ReasonGPUUnhealthy = "GPUShareGPUUnhealthy"
)

const eventAction = "GPUShare"

// eventMemo emits an event only when a pod's story changes, so a pod waiting
// through many reconciles gets one event per new situation, not one per
// reconcile. It is pruned to the pods still seen in each namespace.
type eventMemo struct {
	mu   sync.Mutex
	last map[string]map[types.UID]string // namespace → pod → reason+message
}

// changed reports whether (reason, message) is news for pod, and remembers it.
func (m *eventMemo) changed(pod *corev1.Pod, reason, message string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.last == nil {
		m.last = map[string]map[types.UID]string{}
	}
	ns := m.last[pod.Namespace]
	if ns == nil {
		ns = map[types.UID]string{}
		m.last[pod.Namespace] = ns
	}
	key := reason + "\x00" + message
	if ns[pod.UID] == key {
		return false
	}
	ns[pod.UID] = key
	return true
}

// keep forgets pods of namespace not in seen.
func (m *eventMemo) keep(namespace string, seen map[types.UID]bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for uid := range m.last[namespace] {
		if !seen[uid] {
			delete(m.last[namespace], uid)
		}
	}
}

// event records an event on a share pod (related: its reservation, if any).
func (c *Controller) event(pod *corev1.Pod, related *corev1.Pod, eventType, reason, message string) {
	if c.opts.Recorder == nil || !c.memo.changed(pod, reason, message) {
		return
	}
	if len(message) > 1000 { // events.k8s.io notes are at most 1 kB
		message = message[:997] + "..."
	}
	if related == nil {
		c.opts.Recorder.Eventf(pod, nil, eventType, reason, eventAction, "%s", message)
		return
	}
	c.opts.Recorder.Eventf(pod, related, eventType, reason, eventAction, "%s", message)
}
