package nodeagent

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"

	"github.com/gpuvc/gpuvc/api/contract"
	"github.com/gpuvc/gpuvc/gpu/health"
	"github.com/gpuvc/gpuvc/gpu/inventory"
)

// Device is what the drain needs of a device the kubelet hands out: its GPU
// and its weight in GPUs (a whole GPU 1, a MIG device its compute slices over
// the GPU's 7).
type Device struct {
	GPU    string
	Weight float64
}

// migComputeSlices is the compute slices of every MIG-capable model gpuvc
// knows (A100, H100, H200).
const migComputeSlices = 7

// DevicesOf maps every device of an inventory (GPU UUIDs, MIG device UUIDs)
// to its GPU and weight.
func DevicesOf(inv inventory.Inventory) map[string]Device {
	out := map[string]Device{}
	for _, g := range inv.GPUs {
		out[g.UUID] = Device{GPU: g.UUID, Weight: 1}
		for _, gi := range g.MIG.Instances {
			w := 1.0 / migComputeSlices
			if n, err := strconv.Atoi(strings.SplitN(gi.Profile, "g", 2)[0]); err == nil && n > 0 {
				w = float64(n) / migComputeSlices
			}
			for _, d := range gi.Devices {
				out[d.UUID] = Device{GPU: g.UUID, Weight: w}
			}
		}
	}
	return out
}

// onFailed is a pod found on a GPU out of service.
type onFailed struct {
	gpu    string  // the failed GPU
	weight float64 // GPUs the pod holds on the node
}

// drain evicts the pods on the node that use a GPU out of service: those the
// kubelet's pod-resources API says hold one of its devices (whole-GPU and MIG
// pods, reservation pods) and those annotated gpuvc.dev/gpu-uuid with its
// UUID (reservation pods and the share pods bound to them). Evictions respect
// PodDisruptionBudgets; one refused is tried again at the next enforcement.
// Each eviction adds the GPU time the pod held since it started to its team's
// GPU-seconds lost (annotation gpuvc.dev/gpu-seconds-lost).
func (h *Health) drain(ctx context.Context, out []GPURecord) error {
	bad := uuids(out)
	failure := map[string]health.Event{} // each GPU's last error, by UUID
	for _, r := range out {
		failure[r.Last.UUID] = r.Last
	}
	var errs []error
	found := map[string]onFailed{} // by namespace/name
	if h.Owners != nil {
		owners, err := h.Owners(ctx)
		if err != nil {
			// The annotated pods are still drained; the next enforcement asks again.
			errs = append(errs, fmt.Errorf("finding the pods on failed GPUs: %w", err))
		}
		held := map[string]onFailed{}
		for id, o := range owners {
			d, ok := h.Devices[id]
			if !ok {
				continue
			}
			key := o.Namespace + "/" + o.Pod
			f := held[key]
			f.weight += d.Weight
			if slices.Contains(bad, d.GPU) {
				f.gpu = d.GPU
			}
			held[key] = f
		}
		for key, f := range held {
			if f.gpu != "" {
				found[key] = f
			}
		}
	}
	pods, err := h.Client.CoreV1().Pods("").List(ctx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("spec.nodeName", h.NodeName).String(),
	})
	if err != nil {
		return errors.Join(append(errs, fmt.Errorf("listing pods on node %q: %w", h.NodeName, err))...)
	}
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.Spec.NodeName != h.NodeName || p.DeletionTimestamp != nil || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		f, ok := found[p.Namespace+"/"+p.Name]
		if uuid := p.Annotations[contract.AnnotationGPUUUID]; !ok && slices.Contains(bad, uuid) {
			f, ok = onFailed{gpu: uuid}, true
			if p.Labels[contract.LabelRole] == contract.RoleReservation {
				f.weight = 1 // its GPU; the shares bound to it are part of it
			}
		}
		if !ok {
			continue
		}
		err := h.Client.PolicyV1().Evictions(p.Namespace).Evict(ctx, &policyv1.Eviction{
			ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace},
		})
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			h.Metrics.action(h.NodeName, "eviction_failed")
			h.podEvent(p, corev1.EventTypeWarning, ReasonEvictFailed, "%s on node %s failed and is out of service; evicting this pod was refused (retried): %v",
				failedGPU(failure, f.gpu), h.NodeName, err)
			errs = append(errs, fmt.Errorf("evicting pod %s/%s: %w", p.Namespace, p.Name, err))
		default:
			h.Metrics.action(h.NodeName, "eviction")
			lost := h.lose(p, f.weight)
			h.podEvent(p, corev1.EventTypeWarning, ReasonEvicted, "evicted: %s on node %s failed and is out of service; %.0f GPU-seconds lost%s",
				failedGPU(failure, f.gpu), h.NodeName, lost, requeued(p))
		}
	}
	return errors.Join(errs...)
}

// failedGPU names a failed GPU and its error for the team, who cannot read the
// host node's GPUHealthy condition: "GPU 3 (GPU-…): XID 79 (GPU has fallen
// off the bus)".
func failedGPU(failure map[string]health.Event, uuid string) string {
	if e, ok := failure[uuid]; ok {
		return e.String()
	}
	return "GPU " + uuid
}

// requeued says what becomes of a queued pod's quota: Kueue ends the pod's
// Workload with the pod, and what replaces the pod queues anew.
func requeued(p *corev1.Pod) string {
	q := p.Labels[contract.LabelKueueQueueName]
	if q == "" {
		return ""
	}
	return fmt.Sprintf("; the GPU quota it held in queue %s is released, and a pod created to replace it waits in that queue for admission", q)
}

// lose adds the GPU time an evicted pod held since it started to its team's
// GPU-seconds lost, and returns it.
func (h *Health) lose(p *corev1.Pod, weight float64) float64 {
	team, ok := strings.CutPrefix(p.Namespace, contract.TeamNamespacePrefix)
	if !ok || weight <= 0 || p.Status.StartTime == nil {
		return 0
	}
	secs := weight * max(h.clock().Since(p.Status.StartTime.Time).Seconds(), 0)
	h.mu.Lock()
	if h.lost == nil {
		h.lost = map[string]float64{}
	}
	h.lost[team] += secs
	h.mu.Unlock()
	h.Metrics.lost(h.NodeName, team, secs)
	return secs
}

func (h *Health) podEvent(p *corev1.Pod, kind, reason, note string, args ...any) {
	if h.Recorder != nil {
		h.Recorder.Eventf(p, nil, kind, reason, eventAction, note, args...)
	}
}
