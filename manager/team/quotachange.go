package team

import (
	"context"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	gpuvcv1 "github.com/gpuvc/gpuvc/api/v1alpha1"
)

// quotaHardNow is the team's ResourceQuota hard limits as the cache has them;
// found is false when the team has no quota.
func (r *Reconciler) quotaHardNow(ctx context.Context, t *gpuvcv1.Team) (hard corev1.ResourceList, found bool, err error) {
	q := &corev1.ResourceQuota{}
	err = r.client.Get(ctx, types.NamespacedName{Namespace: gpuvcv1.HostNamespace(t.Name), Name: QuotaName}, q)
	if apierrors.IsNotFound(err) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	return q.Spec.Hard, true, nil
}

// announceQuotaChange tells the team, on its host Team and in its virtual
// cluster, that its quota's hard limits went from before to after (nil: no
// limit). Only a change of a provisioned team is news: a new team's first quota
// is in its spec. The same change is told once, though the cache may show the
// old quota to a reconcile that follows the write.
func (r *Reconciler) announceQuotaChange(ctx context.Context, t *gpuvcv1.Team, before corev1.ResourceList, existed bool, after corev1.ResourceList) {
	if !existed && t.Status.Namespace == "" {
		return
	}
	change := quotaChange(before, after)
	if change == "" {
		return
	}
	key := fmt.Sprintf("%s/%s", t.Name, change)
	r.mu.Lock()
	told := r.quotaTold[t.Name] == key
	r.quotaTold[t.Name] = key
	r.mu.Unlock()
	if told {
		return
	}
	r.recorder.Eventf(t, nil, corev1.EventTypeNormal, "QuotaChanged", "Quota", "ResourceQuota %s/%s: %s", gpuvcv1.HostNamespace(t.Name), QuotaName, change)
	r.teamEvents.Record(ctx, t, corev1.EventTypeNormal, "QuotaChanged", "Quota",
		"your quota changed: "+change+". A pod that would go over it is refused when it is created; pods already running keep running")
}

// quotaChange lists what differs between two sets of hard limits, resource by
// resource in name order, "" when nothing does.
func quotaChange(before, after corev1.ResourceList) string {
	names := map[corev1.ResourceName]bool{}
	for n := range before {
		names[n] = true
	}
	for n := range after {
		names[n] = true
	}
	sorted := make([]string, 0, len(names))
	for n := range names {
		sorted = append(sorted, string(n))
	}
	sort.Strings(sorted)
	var changes []string
	for _, n := range sorted {
		b, hadB := before[corev1.ResourceName(n)]
		a, hasA := after[corev1.ResourceName(n)]
		switch {
		case hadB && hasA && b.Cmp(a) == 0:
		case hadB && hasA:
			changes = append(changes, fmt.Sprintf("%s %s → %s", n, b.String(), a.String()))
		case hasA:
			changes = append(changes, fmt.Sprintf("%s no limit → %s", n, a.String()))
		default:
			changes = append(changes, fmt.Sprintf("%s %s → no limit", n, b.String()))
		}
	}
	return strings.Join(changes, ", ")
}

// forget drops what is kept in memory about a deleted team.
func (r *Reconciler) forget(team string) {
	r.mu.Lock()
	delete(r.quotaTold, team)
	r.mu.Unlock()
	r.teamEvents.Forget(team)
}
