package nodeagent

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/retry"

	"github.com/gpuvc/gpuvc/gpu/health"
)

// HealthPolicy is what the agent does to its node when a GPU fails. Every
// policy sets the GPUHealthy condition and the unhealthy-GPUs annotation,
// records events and metrics, and tells the device plugin.
type HealthPolicy string

const (
	// HealthReport changes no scheduling: condition, annotation, events, metrics.
	HealthReport HealthPolicy = "report"
	// HealthTaint also taints the node gpuvc.dev/gpu-unhealthy=true:NoSchedule.
	HealthTaint HealthPolicy = "taint"
	// HealthCordonDrain also taints and cordons the node and evicts the pods
	// that hold a failed GPU.
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

// HealthFieldManager owns the condition and the annotation the health side
// applies; the inventory publisher (FieldManager) never touches them.
const HealthFieldManager = "gpuvc-agent-health"

// Health keeps a node's GPU health on its Node. A GPU once failed stays
// unhealthy until the agent restarts (after the GPU was reset or replaced):
// NVML does not report recovery.
type Health struct {
	Client   kubernetes.Interface
	NodeName string
	Policy   HealthPolicy
	// GPUs is the node's GPU count, for messages.
	GPUs int
	// Recorder records events on the Node and on evicted pods; nil records none.
	Recorder events.EventRecorder
	// Metrics, if set, count failures and actions.
	Metrics *HealthMetrics
	// OnUnhealthy is told about every GPU newly failed (the device plugin
	// marks it Unhealthy); may be nil.
	OnUnhealthy func(uuid string)
	// Resync is the time between two enforcements of the state (a removed
	// taint comes back, a refused eviction is tried again); zero means 30s.
	Resync time.Duration

	mu        sync.Mutex
	failed    map[string]health.Event // by UUID, the first failure
	announced map[string]bool         // GPUs a GPUUnhealthy event was recorded for
}

// Failed returns the failed GPUs, by index.
func (h *Health) Failed() []health.Event {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]health.Event, 0, len(h.failed))
	for _, e := range h.failed {
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Index < out[j].Index })
	return out
}

// Run publishes the node's current health, then follows the watcher: each
// newly failed GPU is published at once, and the whole state is enforced again
// every Resync. It returns when ctx ends (nil) or the watcher fails.
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
	t := time.NewTicker(resync)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case err := <-watched:
			if err != nil {
				return fmt.Errorf("watching GPU health: %w", err)
			}
			return nil
		case <-changed:
		case <-t.C:
		}
		if err := h.Enforce(ctx); err != nil && ctx.Err() == nil {
			log.Error(err, "enforcing GPU health failed; retrying", "in", resync)
		}
	}
}

// record remembers a failure and reports whether the GPU is newly failed.
func (h *Health) record(ctx context.Context, e health.Event) bool {
	h.mu.Lock()
	if h.failed == nil {
		h.failed = map[string]health.Event{}
	}
	_, known := h.failed[e.UUID]
	if !known {
		h.failed[e.UUID] = e
	}
	h.mu.Unlock()
	h.Metrics.failure(h.NodeName, e)
	logr.FromContextOrDiscard(ctx).Info("GPU failed", "node", h.NodeName, "gpu", e.Index, "uuid", e.UUID, "kind", e.Kind, "xid", e.XID, "new", !known)
	if !known && h.OnUnhealthy != nil {
		h.OnUnhealthy(e.UUID)
	}
	return !known
}

// Report records a failure and enforces the state at once (what Run does for
// each watched event).
func (h *Health) Report(ctx context.Context, e health.Event) error {
	h.record(ctx, e)
	return h.Enforce(ctx)
}

// Enforce makes the Node show the current health: condition, annotation and,
// by policy, taint, cordon and evictions. Idempotent.
func (h *Health) Enforce(ctx context.Context) error {
	failed := h.Failed()
	h.Metrics.healthy(h.NodeName, failed)
	node, err := h.applyStatus(ctx, failed)
	if err != nil {
		return err
	}
	if len(failed) == 0 {
		return h.onFreshNode(ctx, node, func(n *corev1.Node) error { return h.untaint(ctx, n) })
	}
	var errs []error
	if h.Policy == HealthTaint || h.Policy == HealthCordonDrain {
		errs = append(errs, h.onFreshNode(ctx, node, func(n *corev1.Node) error { return h.taint(ctx, n, failed) }))
	}
	if h.Policy == HealthCordonDrain {
		errs = append(errs, h.drain(ctx, failed))
	}
	return errors.Join(errs...)
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

// summary is the condition message: "GPU 3 (GPU-…): XID 79 (...); GPU 5 ...".
func summary(failed []health.Event, total int) string {
	parts := make([]string, 0, len(failed))
	for _, e := range failed {
		parts = append(parts, e.String())
	}
	return fmt.Sprintf("%d of %d GPUs failed: %s", len(failed), total, strings.Join(parts, "; "))
}

func uuids(failed []health.Event) []string {
	out := make([]string, 0, len(failed))
	for _, e := range failed {
		out = append(out, e.UUID)
	}
	slices.Sort(out)
	return out
}
