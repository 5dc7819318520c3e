package syncer

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The ResourceQuota of a queueing team allows its ceiling plus what may wait
// beyond it (spec.queueing.maxQueued); a pod beyond both is refused by the
// quota with the API server's "exceeded quota" message, which says nothing of
// queues. gpuvc's validating webhook, which runs before the quota, refuses
// such a pod first, saying why and what to do. The quota stays the fence: the
// usage read here may lag by a moment.

// QuotaUsage reads what a namespace's ResourceQuota counts now.
type QuotaUsage interface {
	// GPUsUsed returns status.used of the namespace's quota per GPU resource
	// (requests.<resource> without the prefix); nil when there is no quota.
	GPUsUsed(ctx context.Context, namespace string) (map[corev1.ResourceName]int64, error)
}

// ClientQuotaUsage reads the ResourceQuota Name through a client (a cache in
// the manager).
type ClientQuotaUsage struct {
	Reader client.Reader
	Name   string
}

// GPUsUsed implements QuotaUsage.
func (q ClientQuotaUsage) GPUsUsed(ctx context.Context, namespace string) (map[corev1.ResourceName]int64, error) {
	var rq corev1.ResourceQuota
	if err := q.Reader.Get(ctx, client.ObjectKey{Namespace: namespace, Name: q.Name}, &rq); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, err
	}
	used := map[corev1.ResourceName]int64{}
	for name, qty := range rq.Status.Used {
		if res, ok := strings.CutPrefix(string(name), "requests."); ok && isGPUResource(corev1.ResourceName(res)) {
			used[corev1.ResourceName(res)] = qty.Value()
		}
	}
	return used, nil
}

// checkQueueDepth refuses a queueing team's pod that would take the team's
// pods, running and waiting, beyond its ceiling plus its queue depth.
func checkQueueDepth(in *Input) (string, string, bool) {
	if in.Policy.KueueQueue == "" || in.QuotaUsed == nil {
		return "", "", false
	}
	devices := podDevices(in.Pod)
	for _, res := range slices.Sorted(maps.Keys(devices)) {
		ceiling, known := in.Policy.KueueCeiling[res]
		if !known {
			continue
		}
		queued := in.Policy.KueueMaxQueued[res]
		used, want := in.QuotaUsed[res], devices[res]
		if used+want <= ceiling+queued {
			continue
		}
		return ReasonQueueFull, fmt.Sprintf(
			"team %s's pods, running and waiting in its queue, already hold %d %s and this pod asks for %d (limit: %d = %d the team may run with, its guarantee plus borrowing limit, + %d that may wait beyond it, spec.queueing.maxQueued); wait for pods to finish or delete waiting ones, or ask the platform team to raise spec.queueing.maxQueued",
			in.Policy.Team, used, res, want, ceiling+queued, ceiling, queued), true
	}
	return "", "", false
}
