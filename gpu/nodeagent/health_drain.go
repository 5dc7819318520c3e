package nodeagent

import (
	"context"
	"errors"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"

	"github.com/gpuvc/gpuvc/api/contract"
	"github.com/gpuvc/gpuvc/gpu/health"
)

// drain evicts the pods on the node that hold a failed GPU, as far as the API
// server tells: pods annotated gpuvc.dev/gpu-uuid with its UUID (reservation
// pods and the share pods bound to them). Whole-GPU pods of the NVIDIA device
// plugin carry no such record; the taint and cordon keep new pods off, and
// their own failures end them. Evictions respect PodDisruptionBudgets; one
// refused is tried again at the next enforcement.
func (h *Health) drain(ctx context.Context, failed []health.Event) error {
	bad := uuids(failed)
	pods, err := h.Client.CoreV1().Pods("").List(ctx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("spec.nodeName", h.NodeName).String(),
	})
	if err != nil {
		return fmt.Errorf("listing pods on node %q: %w", h.NodeName, err)
	}
	var errs []error
	for i := range pods.Items {
		p := &pods.Items[i]
		uuid := p.Annotations[contract.AnnotationGPUUUID]
		if p.Spec.NodeName != h.NodeName || p.DeletionTimestamp != nil || !slices.Contains(bad, uuid) {
			continue
		}
		err := h.Client.PolicyV1().Evictions(p.Namespace).Evict(ctx, &policyv1.Eviction{
			ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace},
		})
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			h.Metrics.action(h.NodeName, "eviction_failed")
			h.podEvent(p, corev1.EventTypeWarning, ReasonEvictFailed, "GPU %s on node %s failed; evicting this pod was refused (retried): %v", uuid, h.NodeName, err)
			errs = append(errs, fmt.Errorf("evicting pod %s/%s: %w", p.Namespace, p.Name, err))
		default:
			h.Metrics.action(h.NodeName, "eviction")
			h.podEvent(p, corev1.EventTypeWarning, ReasonEvicted, "evicted: GPU %s on node %s failed (see the node's %s condition)", uuid, h.NodeName, contract.ConditionGPUHealthy)
		}
	}
	return errors.Join(errs...)
}

func (h *Health) podEvent(p *corev1.Pod, kind, reason, note string, args ...any) {
	if h.Recorder != nil {
		h.Recorder.Eventf(p, nil, kind, reason, eventAction, note, args...)
	}
}
