package nodeagent

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/clock"

	"github.com/gpuvc/gpuvc/api/contract"
	"github.com/gpuvc/gpuvc/gpu/health"
)

// HealthPolicy is what the agent does to its node when a GPU fails. Every
// policy sets the GPUHealthy condition and the unhealthy-GPUs annotation,
// records events and metrics, and tells the device plugin.
type HealthPolicy string

const (
	// HealthReport changes no scheduling: condition, annotation, events, metrics.
	HealthReport HealthPolicy = "report"
	// HealthTaint also taints the node gpuvc.dev/gpu-unhealthy=true:NoSchedule
	// when its GPUs are out (NodeTaintMode).
	HealthTaint HealthPolicy = "taint"
	// HealthCordonDrain also evicts the pods that use a GPU out, and cordons
	// the node with the taint.
	HealthCordonDrain HealthPolicy = "cordon-drain"
)

// ParseHealthPolicy reads a --gpu-failure value.
func ParseHealthPolicy(s string) (HealthPolicy, error) {
	switch p := HealthPolicy(s); p {
	case HealthReport, HealthTaint, HealthCordonDrain:
		return p, nil
	}
	return "", fmt.Errorf("%q is not one of report, taint, cordon-drain", s)
}

// HealthFieldManager owns the condition and the annotations the health side
// applies; the inventory publisher (FieldManager) never touches them.
const HealthFieldManager = "gpuvc-agent-health"

// NodeTaintMode says when the taint (and, with cordon-drain, the cordon) goes
// on the node (--gpu-failure-node-taint).
type NodeTaintMode string

const (
	// NodeTaintAllOut taints only a node whose GPUs are all out: a node keeps
	// serving its healthy GPUs (the device plugin withdraws the failed one).
	NodeTaintAllOut NodeTaintMode = "all"
	// NodeTaintAnyOut taints a node as soon as one GPU is out.
	NodeTaintAnyOut NodeTaintMode = "any"
)

// ParseNodeTaintMode reads a --gpu-failure-node-taint value.
func ParseNodeTaintMode(s string) (NodeTaintMode, error) {
	switch m := NodeTaintMode(s); m {
	case NodeTaintAllOut, NodeTaintAnyOut:
		return m, nil
	}
	return "", fmt.Errorf("%q is not one of all (taint when every GPU is out), any (taint when one is)", s)
}

// Health keeps a node's GPU health on its Node, GPU by GPU: a failed GPU is
// taken out of service alone (device plugin Unhealthy, annotation, drain of
// the pods using it), returns by itself after Quarantine.Probation with no new
// error, and is quarantined for good after Quarantine.MaxFailures failures,
// until an operator clears it (annotation gpuvc.dev/gpu-quarantine-clear). The
// records live on the Node, so a restarted agent continues them.
type Health struct {
	Client   kubernetes.Interface
	NodeName string
	Policy   HealthPolicy
	// GPUs is the node's GPU count: messages, and the taint when all are out.
	GPUs int
	// Quarantine says how long a failed GPU stays out.
	Quarantine QuarantinePolicy
	// NodeTaint says when the taint policies taint; "" is NodeTaintAllOut.
	NodeTaint NodeTaintMode
	// Clock is the time of probations; nil is the real clock.
	Clock clock.WithTicker
	// Recorder records events on the Node and on evicted pods; nil records none.
	Recorder events.EventRecorder
	// Metrics, if set, count failures and actions.
	Metrics *HealthMetrics
	// OnUnhealthy is told about every GPU taken out of service (the device
	// plugin marks it Unhealthy), OnHealthy about every GPU back in service;
	// either may be nil.
	OnUnhealthy func(uuid string)
	OnHealthy   func(uuid string)
	// Owners lists which pod holds each device (the kubelet's pod-resources
	// API), so that the drain finds whole-GPU and MIG pods; nil drains only
	// the pods annotated gpuvc.dev/gpu-uuid.
	Owners func(ctx context.Context) (map[string]DeviceOwner, error)
	// Devices maps the node's device IDs to their GPU and weight
	// (DevicesOf); the drain needs it with Owners.
	Devices map[string]Device
	// Resync is the time between two enforcements of the state (a removed
	// taint comes back, a refused eviction is tried again); zero means 30s.
	Resync time.Duration

	mu       sync.Mutex
	q        Quarantine
	restored bool
	notes    []note             // events to record on the Node at the next enforcement
	lost     map[string]float64 // GPU-seconds lost per team, cumulative
}

// note is a Node event waiting for the node object.
type note struct{ kind, reason, text string }

func (h *Health) clock() clock.WithTicker {
	if h.Clock == nil {
		return clock.RealClock{}
	}
	return h.Clock
}

// Failed returns the last error of each GPU out of service, by index.
func (h *Health) Failed() []health.Event {
	out := []health.Event{}
	for _, r := range h.Out() {
		out = append(out, r.Last)
	}
	return out
}

// Out returns the records of the GPUs out of service, by index.
func (h *Health) Out() []GPURecord {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.q.Out()
}

// Record returns a GPU's quarantine record; false if it never failed.
func (h *Health) Record(uuid string) (GPURecord, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.q.Record(uuid)
}

// Run publishes the node's current health, then follows the watcher: each
// newly failed GPU is published at once, a probation's end returns its GPU
// on time, and the whole state is enforced again every Resync. It returns
// when ctx ends (nil) or the watcher fails.
func (h *Health) Run(ctx context.Context, w health.Watcher) error {
	log := logr.FromContextOrDiscard(ctx).WithValues("node", h.NodeName)
	if err := h.Enforce(ctx); err != nil {
		log.Error(err, "publishing GPU health failed; retrying")
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	watched := make(chan error, 1)
	changed := make(chan struct{}, 1)
	go func() {
		watched <- w.Watch(ctx, func(e health.Event) {
			if h.record(ctx, e) {
				select {
				case changed <- struct{}{}:
				default:
				}
			}
		})
	}()
	resync := h.Resync
	if resync <= 0 {
		resync = 30 * time.Second
	}
	t := h.clock().NewTicker(resync)
	defer t.Stop()
	for {
		var expired <-chan time.Time
		var timer clock.Timer
		h.mu.Lock()
		next, ok := h.q.Next()
		h.mu.Unlock()
		if ok {
			timer = h.clock().NewTimer(max(next.Sub(h.clock().Now()), 0))
			expired = timer.C()
		}
		select {
		case <-ctx.Done():
			return nil
		case err := <-watched:
			if err != nil {
				return fmt.Errorf("watching GPU health: %w", err)
			}
			return nil
		case <-changed:
		case <-t.C():
		case <-expired:
		}
		if timer != nil {
			timer.Stop()
		}
		if err := h.Enforce(ctx); err != nil && ctx.Err() == nil {
			log.Error(err, "enforcing GPU health failed; retrying", "in", resync)
		}
	}
}

// record puts an error through the quarantine and reports whether the GPU's
// state changed.
func (h *Health) record(ctx context.Context, e health.Event) bool {
	h.mu.Lock()
	h.q.Policy = h.Quarantine
	tr := h.q.Fail(e, h.clock().Now())
	rec, _ := h.q.Record(e.UUID)
	switch tr {
	case TransitionOut:
		h.note(corev1.EventTypeWarning, ReasonGPUUnhealthy, "%s: taken out of service (device plugin Unhealthy, condition %s=False, annotation %s); policy %s",
			rec.String(h.Quarantine), contract.ConditionGPUHealthy, contract.AnnotationUnhealthyGPUs, h.Policy)
	case TransitionPermanent:
		h.note(corev1.EventTypeWarning, ReasonGPUQuarantined, "%s: failed %d times, quarantined for good; return it with kubectl annotate node %s %s=%s",
			rec.String(h.Quarantine), rec.Failures, h.NodeName, contract.AnnotationGPUQuarantineClear, e.UUID)
	case TransitionExtended:
		// The same text for every repeat: the event series aggregates them.
		h.note(corev1.EventTypeWarning, ReasonProbationRestarted, "%s: a new error during probation restarted it (%v with no new error from the last one)", e, h.Quarantine.Probation)
	}
	h.mu.Unlock()
	h.Metrics.failure(h.NodeName, e)
	if tr == TransitionOut || tr == TransitionPermanent {
		h.Metrics.action(h.NodeName, "quarantine")
	}
	logr.FromContextOrDiscard(ctx).Info("GPU failed", "node", h.NodeName, "gpu", e.Index, "uuid", e.UUID, "kind", e.Kind, "xid", e.XID,
		"transition", tr, "failures", rec.Failures)
	if (tr == TransitionOut || tr == TransitionPermanent) && h.OnUnhealthy != nil {
		h.OnUnhealthy(e.UUID)
	}
	return tr != TransitionNone
}

// note queues a Node event; h.mu held.
func (h *Health) note(kind, reason, format string, args ...any) {
	h.notes = append(h.notes, note{kind: kind, reason: reason, text: fmt.Sprintf(format, args...)})
}

// Report records a failure and enforces the state at once (what Run does for
// each watched event).
func (h *Health) Report(ctx context.Context, e health.Event) error {
	h.record(ctx, e)
	return h.Enforce(ctx)
}

// Enforce makes the Node show the current health: it continues the records a
// previous agent left, returns the GPUs whose probation ended or an operator
// cleared, and sets condition, annotations and, by policy, taint, cordon and
// evictions. Idempotent.
func (h *Health) Enforce(ctx context.Context) error {
	node, err := h.Client.CoreV1().Nodes().Get(ctx, h.NodeName, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("reading node %q: %w", h.NodeName, err)
	}
	h.restore(ctx, node)
	var errs []error
	if node, err = h.clearRequested(ctx, node); err != nil {
		errs = append(errs, err)
	}
	h.expire()
	out := h.Out()
	h.Metrics.state(h.NodeName, out)
	node, err = h.applyStatus(ctx, node, out)
	if err != nil {
		return errors.Join(append(errs, err)...)
	}
	if h.Policy == HealthTaint || h.Policy == HealthCordonDrain {
		if h.taintWanted(out) {
			errs = append(errs, h.onFreshNode(ctx, node, func(n *corev1.Node) error { return h.taint(ctx, n, out) }))
		} else {
			errs = append(errs, h.onFreshNode(ctx, node, func(n *corev1.Node) error { return h.untaint(ctx, n) }))
		}
	} else {
		errs = append(errs, h.onFreshNode(ctx, node, func(n *corev1.Node) error { return h.untaint(ctx, n) }))
	}
	if h.Policy == HealthCordonDrain && len(out) > 0 {
		h.mu.Lock()
		before := maps.Clone(h.lost)
		h.mu.Unlock()
		errs = append(errs, h.drain(ctx, out))
		h.mu.Lock()
		drained := !maps.Equal(before, h.lost)
		h.mu.Unlock()
		if drained { // the GPU-seconds lost go on the node at once
			if _, err := h.applyStatus(ctx, node, out); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// taintWanted: some GPU is out and, unless NodeTaintAnyOut, every one.
func (h *Health) taintWanted(out []GPURecord) bool {
	if len(out) == 0 {
		return false
	}
	return h.NodeTaint == NodeTaintAnyOut || (h.GPUs > 0 && len(out) >= h.GPUs)
}

// expire returns the GPUs whose probation ended.
func (h *Health) expire() {
	h.mu.Lock()
	back := h.q.Expire(h.clock().Now())
	for _, uuid := range back {
		rec, _ := h.q.Record(uuid)
		h.note(corev1.EventTypeNormal, ReasonGPUReturned, "%s: probation of %v ended with no new error; back in service",
			rec.String(h.Quarantine), h.Quarantine.Probation)
	}
	h.mu.Unlock()
	for _, uuid := range back {
		h.returned(uuid, "return")
	}
}

// returned tells the device plugin and the metrics about a GPU back in
// service.
func (h *Health) returned(uuid, action string) {
	h.Metrics.action(h.NodeName, action)
	if action == "return" {
		h.Metrics.returned(h.NodeName, uuid)
	}
	if h.OnHealthy != nil {
		h.OnHealthy(uuid)
	}
}

// onFreshNode runs a conditional write of the node's spec, reading the node
// again after a conflict (the kubelet, the node lifecycle controller or the
// agent's own publisher wrote it meanwhile).
func (h *Health) onFreshNode(ctx context.Context, node *corev1.Node, write func(*corev1.Node) error) error {
	return onFreshNode(ctx, h.Client, h.NodeName, node, write)
}

// onFreshNode runs write on node, and after a conflict again on a fresh read.
func onFreshNode(ctx context.Context, client kubernetes.Interface, name string, node *corev1.Node, write func(*corev1.Node) error) error {
	first := true
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if !first {
			var err error
			if node, err = client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{}); err != nil {
				return err
			}
		}
		first = false
		return write(node)
	})
}

// summary is the condition message: "1 of 8 GPUs out of service: GPU 3
// (GPU-…): XID 79 (...); failure 1 of 3, probation until …".
func summary(out []GPURecord, total int, p QuarantinePolicy) string {
	parts := make([]string, 0, len(out))
	for _, r := range out {
		parts = append(parts, r.String(p))
	}
	return fmt.Sprintf("%d of %d GPUs out of service: %s", len(out), total, strings.Join(parts, " | "))
}

func uuids(out []GPURecord) []string {
	ids := make([]string, 0, len(out))
	for _, r := range out {
		ids = append(ids, r.Last.UUID)
	}
	slices.Sort(ids)
	return ids
}
