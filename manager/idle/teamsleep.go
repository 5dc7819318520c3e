package idle

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gpuvcv1 "github.com/gpuvc/gpuvc/api/v1alpha1"
)

// sleepIdleTeam acts on the GPU-pod reaper's request (action Sleep: every GPU
// pod of the team idle for spec.idle.gpuPods.after): the path of `gpuvc team
// sleep` — the team's API address to the waker, the control plane to zero —
// then every team pod is evicted, GPU pods, reservations and their shares, and
// pods without GPUs alike (a sleeping vCluster runs nothing: a pod left running
// would wake it again). The control plane goes first, so its syncer is gone
// before the pods are: a controller of the team (a Deployment, a notebook's
// StatefulSet) cannot recreate them until the team's next request wakes it.
func (s *Sleeper) sleepIdleTeam(ctx context.Context, t *gpuvcv1.Team, v vcluster, st state, sleepAfter bool) error {
	g := t.Spec.Idle.GPUPods
	switch {
	case g == nil || g.Action != gpuvcv1.IdleActionSleep:
		s.hostEvent(t, corev1.EventTypeWarning, "SleepRefused", "Request", "the GPU-pod policy asked for sleep, but spec.idle.gpuPods.action is no longer Sleep; the vCluster stays awake")
		return nil
	case !sleepAfter:
		s.event(ctx, t, corev1.EventTypeWarning, "SleepRefused", "Request", "spec.idle.gpuPods.action Sleep, but the team has no spec.idle.vcluster: nothing would wake it on a connection; set spec.idle.vcluster.sleepAfter")
		return nil
	}
	why := fmt.Sprintf("every GPU pod of the team stayed at or below %d%% GPU utilization for %v (spec.idle.gpuPods.action Sleep)", g.MaxUtilizationPercent, g.After.Duration)
	if !st.asleep() {
		if err := s.routeAndSettle(ctx, v); err != nil {
			return err
		}
		s.tellTeamAsleep(ctx, t, why+"; its pods are evicted so their GPUs go back to the quota")
		if err := s.sleep(ctx, v); err != nil {
			return err
		}
	}
	evicted, refused, err := s.evictWorkloads(ctx, v)
	if err != nil {
		return err
	}
	msg := fmt.Sprintf("put to sleep: %s; %d team pod(s) evicted so their GPUs go back to the quota; the next connection to the team's API address wakes it", why, evicted)
	if len(refused) > 0 {
		s.event(ctx, t, corev1.EventTypeWarning, "EvictionRefused", "Sleep", fmt.Sprintf(
			"sleeping the idle team, %d pod(s) could not be evicted (%s): they keep running, and a running team pod wakes the vCluster at the next look",
			len(refused), strings.Join(refused, "; ")))
	}
	s.hostEvent(t, corev1.EventTypeNormal, "Asleep", "Sleep", "vCluster control plane scaled to zero: "+msg)
	return s.setCondition(ctx, t, true, gpuvcv1.ReasonAsleep, msg, func(is *gpuvcv1.IdleStatus) { is.AsleepSince = nowTime(s) })
}

// evictWorkloads evicts every team pod on the host but the control plane and
// vCluster's system pods, through the Eviction API (PodDisruptionBudgets hold:
// a refused pod is reported, not deleted).
func (s *Sleeper) evictWorkloads(ctx context.Context, v vcluster) (evicted int, refused []string, err error) {
	pods := &corev1.PodList{}
	if err := s.reader.List(ctx, pods, client.InNamespace(v.namespace)); err != nil {
		return 0, nil, fmt.Errorf("listing pods of %s: %w", v.namespace, err)
	}
	for i := range pods.Items {
		p := &pods.Items[i]
		if !isWorkload(p, v) {
			continue
		}
		ev := &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace}}
		switch err := client.IgnoreNotFound(s.client.SubResource("eviction").Create(ctx, p, ev)); {
		case err == nil:
			evicted++
		case ctx.Err() != nil:
			return evicted, refused, ctx.Err()
		default:
			refused = append(refused, fmt.Sprintf("%s: %v", p.Name, err))
		}
	}
	return evicted, refused, nil
}
