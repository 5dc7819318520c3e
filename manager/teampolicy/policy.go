package teampolicy

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpuvc/gpuvc/api/contract"
	gpuvcv1 "github.com/gpuvc/gpuvc/api/v1alpha1"
	"github.com/gpuvc/gpuvc/syncer"
)

// Policy is what Team t allows its pods, as both fences judge them: the webhook
// (through Source) and the CEL policy (through the parameters the reconciler
// writes). product and memMiB describe the GPUs of the team's pool (PoolGPU).
func Policy(t *gpuvcv1.Team, product string, memMiB int64, systemPool string) *syncer.TeamPolicy {
	p := &syncer.TeamPolicy{
		Team:             t.Name,
		Namespace:        gpuvcv1.HostNamespace(t.Name),
		Pool:             t.Spec.Pool,
		PoolGPUProduct:   product,
		PoolGPUMemoryMiB: memMiB,
		SystemPool:       systemPool,
		MaxGPUsPerPod:    t.EffectiveMaxGPUsPerPod(),
		VClusterName:     gpuvcv1.ReleaseName(t),
	}
	for profile := range t.Spec.Quota.MIG {
		p.AllowedMIGProfiles = append(p.AllowedMIGProfiles, profile)
	}
	sort.Strings(p.AllowedMIGProfiles)
	if g := t.Spec.GPUSharing; g != nil {
		p.FractionsEnabled = g.Fractions
		p.WholeGPUAs = g.WholeGPUAs
	}
	if pl := t.Spec.Placement; pl != nil {
		for _, a := range pl.AllowedTolerations {
			p.AllowedTolerations = append(p.AllowedTolerations, corev1.Toleration{
				Key: a.Key, Operator: corev1.TolerationOperator(a.Operator), Value: a.Value, Effect: corev1.TaintEffect(a.Effect)})
		}
	}
	if classes := t.Spec.AllowedDeviceClasses(); classes != nil {
		p.DRA, p.AllowedDeviceClasses = true, classes
		// A DRA device counts as one whole GPU: its class does not say its size.
		if g := t.Spec.HostQuota().GPUs; g != nil {
			p.GPUCeiling = int64(*g)
		}
	}
	if t.Spec.Queueing != nil {
		p.KueueQueue = contract.KueueLocalQueueName
		p.AllowedKueuePriorityClasses = slices.Clone(t.Spec.Queueing.PriorityClasses)
		p.KueueCeiling, p.KueueMaxQueued = queueBounds(&t.Spec)
	}
	return p
}

// PoolGPU reads the GPU product and memory of a pool from its nodes' GFD labels;
// when nodes differ, the most common product wins (ties: alphabetical), so MIG
// mapping targets what most of the pool offers.
func PoolGPU(ctx context.Context, reader client.Reader, pool string) (string, int64, error) {
	nodes := &corev1.NodeList{}
	// Read only: the cache's nodes are not copied (the webhook asks on every
	// call, and a node is a large object).
	if err := reader.List(ctx, nodes, client.MatchingLabels{contract.LabelPool: pool}, client.UnsafeDisableDeepCopy); err != nil {
		return "", 0, fmt.Errorf("listing nodes of pool %s: %w", pool, err)
	}
	count := map[string]int{}
	memory := map[string]int64{}
	for _, n := range nodes.Items {
		product := n.Labels[contract.LabelGPUProduct]
		if product == "" {
			continue
		}
		count[product]++
		if m, err := strconv.ParseInt(n.Labels[contract.LabelGPUMemory], 10, 64); err == nil && m > memory[product] {
			memory[product] = m
		}
	}
	best := ""
	for product, c := range count {
		if best == "" || c > count[best] || (c == count[best] && product < best) {
			best = product
		}
	}
	return best, memory[best], nil
}

// queueBounds are a queueing team's ceiling and queue depth per GPU resource.
func queueBounds(s *gpuvcv1.TeamSpec) (ceiling, maxQueued map[corev1.ResourceName]int64) {
	c := s.CeilingQuota()
	ceiling = map[corev1.ResourceName]int64{contract.ResourceGPU: int64(*c.GPUs)}
	maxQueued = map[corev1.ResourceName]int64{contract.ResourceGPU: int64(s.MaxQueuedGPUs())}
	for profile, n := range c.MIG {
		res := corev1.ResourceName(contract.ResourceMIGPrefix + profile)
		ceiling[res], maxQueued[res] = int64(n), int64(s.MaxQueuedMIG(profile))
	}
	return ceiling, maxQueued
}
