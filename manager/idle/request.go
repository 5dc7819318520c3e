package idle

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpuvc/gpuvc/api/contract"
	gpuvcv1 "github.com/gpuvc/gpuvc/api/v1alpha1"
)

// handleRequest acts on a platform engineer's `gpuvc team sleep|wake` (the
// Team's gpuvc.dev/idle-request annotation) and removes the request. It reports
// whether it acted (the policy then waits for the next look).
func (s *Sleeper) handleRequest(ctx context.Context, t *gpuvcv1.Team, v vcluster, st state, sleepAfter bool) (bool, error) {
	req, ok := t.Annotations[contract.AnnotationIdleRequest]
	if !ok {
		return false, nil
	}
	var err error
	switch req {
	case contract.IdleRequestSleep:
		err = s.sleepNow(ctx, t, v, st, sleepAfter)
	case contract.IdleRequestWake:
		err = s.wakeNow(ctx, t, v, st)
	case contract.IdleRequestSleepIdleGPUs:
		err = s.sleepIdleTeam(ctx, t, v, st, sleepAfter)
	default:
		s.hostEvent(t, corev1.EventTypeWarning, "UnknownIdleRequest", "Request",
			fmt.Sprintf("annotation %s=%q: want %s or %s (or the manager's own %s); ignored", contract.AnnotationIdleRequest, req,
				contract.IdleRequestSleep, contract.IdleRequestWake, contract.IdleRequestSleepIdleGPUs))
	}
	if err != nil {
		return true, err
	}
	// The request handled, and only it: one written meanwhile (`gpuvc team wake`
	// right after a sleep was handled) stays for the next look, which its event
	// brings.
	path := "/metadata/annotations/" + strings.NewReplacer("~", "~0", "/", "~1").Replace(contract.AnnotationIdleRequest)
	patch, _ := json.Marshal([]map[string]any{{"op": "test", "path": path, "value": req}, {"op": "remove", "path": path}})
	err = s.client.Patch(ctx, t, client.RawPatch(types.JSONPatchType, patch))
	if apierrors.IsInvalid(err) { // the test failed: another request, or none
		return true, nil
	}
	return true, err
}

func (s *Sleeper) sleepNow(ctx context.Context, t *gpuvcv1.Team, v vcluster, st state, sleepAfter bool) error {
	switch {
	case !sleepAfter:
		s.event(ctx, t, corev1.EventTypeWarning, "SleepRefused", "Request", "sleep requested, but the team has no spec.idle.vcluster: nothing would wake it on a connection; set spec.idle.vcluster.sleepAfter")
		return nil
	case st.workloadPods > 0:
		s.event(ctx, t, corev1.EventTypeWarning, "SleepRefused", "Request", fmt.Sprintf("sleep requested, but %d team pod(s) run on the host; the vCluster stays awake", st.workloadPods))
		return nil
	case st.asleep():
		return nil
	}
	if err := s.routeAndSettle(ctx, v); err != nil {
		return err
	}
	msg := "put to sleep on request (gpuvc team sleep); the next connection to the team's API address wakes it"
	s.tellTeamAsleep(ctx, t, "put to sleep on request of the platform (gpuvc team sleep)")
	if err := s.sleep(ctx, v); err != nil {
		return err
	}
	s.hostEvent(t, corev1.EventTypeNormal, "Asleep", "Sleep", "vCluster control plane scaled to zero: "+msg)
	return s.setCondition(ctx, t, true, gpuvcv1.ReasonAsleep, msg, func(is *gpuvcv1.IdleStatus) { is.AsleepSince = nowTime(s) })
}

// routeAndSettle routes the team's API address to a waker port and waits
// RouteSettle, for kube-proxy to program the waker's endpoint before the
// control plane goes (the idle path has its probe window instead).
func (s *Sleeper) routeAndSettle(ctx context.Context, v vcluster) error {
	l, err := s.listen(v, 0)
	if err != nil {
		return err
	}
	if err := s.route(ctx, v, l.port); err != nil {
		return err
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(s.opts.RouteSettle):
		return nil
	}
}

func (s *Sleeper) wakeNow(ctx context.Context, t *gpuvcv1.Team, v vcluster, st state) error {
	s.touch(t.Name)
	switch {
	case st.asleep():
		s.event(ctx, t, corev1.EventTypeNormal, "Waking", "Wake", "woken on request (gpuvc team wake)")
		_, err := s.ensureAwake(ctx, v, byRequest)
		return err
	case st.routed:
		if err := s.unroute(ctx, v); err != nil {
			return err
		}
		s.event(ctx, t, corev1.EventTypeNormal, "Awake", "Unroute", "woken on request (gpuvc team wake): the team's API address goes straight to the control plane")
	}
	return nil
}
