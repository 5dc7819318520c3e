package share

import (
	"context"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// A quota refusal is remembered per namespace with the resourceVersions of its
// ResourceQuotas. ResourceQuota admission judges a pod against the quotas'
// status, so while no quota changed (and RetryInterval has not passed) another
// reservation would be refused again: the controller does not ask. When a
// quota changes (the quota controller recounts after a pod leaves, or the limit
// grows), the watch wakes the team and one reservation is tried first, alone.

type quotaBlock struct {
	quotas string // fingerprint of the namespace's quotas when refused
	detail *quotaError
	at     time.Time
}

// quotaFingerprint names the namespace's ResourceQuotas and their versions
// (from the cache: the controller watches them).
func (c *Controller) quotaFingerprint(ctx context.Context, namespace string) (string, error) {
	l := &metav1.PartialObjectMetadataList{}
	l.APIVersion, l.Kind = "v1", "ResourceQuotaList"
	if err := c.opts.Client.List(ctx, l, client.InNamespace(namespace)); err != nil {
		return "", err
	}
	var parts []string
	for _, q := range l.Items {
		parts = append(parts, q.Name+"@"+q.ResourceVersion)
	}
	slices.Sort(parts)
	return strings.Join(parts, ","), nil
}

// lastBlock returns the namespace's remembered refusal, if it still holds.
func (c *Controller) lastBlock(namespace, quotas string) (b quotaBlock, holds, probe bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	b, ok := c.blocks[namespace]
	if !ok {
		return quotaBlock{}, false, false
	}
	holds = b.quotas == quotas && c.opts.Clock.Since(b.at) < c.opts.RetryInterval
	return b, holds, true
}

func (c *Controller) setBlock(namespace string, b *quotaBlock) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if b == nil {
		delete(c.blocks, namespace)
		return
	}
	c.blocks[namespace] = *b
}
