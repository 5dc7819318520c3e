package idle

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpuvc/gpuvc/api/contract"
	gpuvcv1 "github.com/gpuvc/gpuvc/api/v1alpha1"
)

// podState is what one look found of a team's GPU pod.
type podState int

const (
	podIdle     podState = iota // utilization known, at or below the threshold
	podBusy                     // utilization known, above the threshold
	podUnknown                  // running, but no agent reports its GPUs
	podStarting                 // not running yet: it will want its GPUs
)

// podLook is one GPU pod of a team at one look of the reaper.
type podLook struct {
	pod     *corev1.Pod
	state   podState
	percent float64
	// idleFor: how long it has been idle (podIdle only).
	idleFor time.Duration
	// due: idle for `after` and not yet acted on in this idle spell.
	due bool
}

// wholeTeamIdle is action Sleep's decision: the team is idle when it has a GPU
// pod and every one of them has been idle for after. A busy pod, a pod whose
// utilization is unknown (unknown is never idle) and a GPU pod still starting
// keep it awake. Pods without GPUs are not looked at: they neither keep the
// team awake nor count as idle. why says what was found, for events.
func wholeTeamIdle(looks []podLook, after time.Duration) (idle bool, why string) {
	if len(looks) == 0 {
		return false, "the team runs no GPU pod"
	}
	var busy, unknown, starting, recent int
	for _, l := range looks {
		switch {
		case l.state == podBusy:
			busy++
		case l.state == podUnknown:
			unknown++
		case l.state == podStarting:
			starting++
		case l.idleFor < after:
			recent++
		}
	}
	if busy+unknown+starting+recent == 0 {
		return true, fmt.Sprintf("all %d GPU pod(s) of the team have been idle for at least %v", len(looks), after)
	}
	var not []string
	for _, n := range []struct {
		n    int
		what string
	}{{busy, "busy"}, {unknown, "of unknown utilization"}, {starting, "not running yet"}, {recent, "idle for less than " + after.String()}} {
		if n.n > 0 {
			not = append(not, fmt.Sprintf("%d %s", n.n, n.what))
		}
	}
	return false, fmt.Sprintf("%d of its %d GPU pod(s) are not idle long enough (%s)", busy+unknown+starting+recent, len(looks), strings.Join(not, ", "))
}

// sleepIfWholeTeamIdle applies action Sleep to a team whose GPU pods are all
// idle: a GPUIdle event on each of them, then the Team's sleep request
// (gpuvc.dev/idle-request: sleep-idle-gpus), on which the idle loop routes the
// team's API address to the waker, scales the control plane to zero and evicts
// the team's pods (Sleeper.sleepIdleTeam). Once per idle spell of the team;
// done reports whether the team was (or had been) asked to sleep, when the
// per-pod notices are not given.
func (r *GPUPodReaper) sleepIfWholeTeamIdle(ctx context.Context, t *gpuvcv1.Team, looks []podLook) (done bool, err error) {
	policy := t.Spec.Idle.GPUPods
	idle, why := wholeTeamIdle(looks, policy.After.Duration)
	r.mu.Lock()
	asked := r.teamAsked[t.UID]
	if idle {
		r.teamAsked[t.UID] = true
		for _, l := range looks {
			r.acted[l.pod.UID] = true
		}
	} else {
		delete(r.teamAsked, t.UID)
	}
	r.mu.Unlock()
	if !idle || asked {
		return idle, nil
	}
	for _, l := range looks {
		r.recorder.Eventf(l.pod, nil, corev1.EventTypeWarning, "GPUIdle", "Sleep",
			"%s; %s: the team's pods are evicted to return their GPUs and its vCluster is put to sleep (action Sleep); the next request to the team's cluster wakes it",
			idleMessage(l.pod, policy, l.idleFor, l.percent), why)
	}
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{
		contract.AnnotationIdleRequest: contract.IdleRequestSleepIdleGPUs}}})
	if err := r.client.Patch(ctx, t, client.RawPatch(types.MergePatchType, patch)); err != nil {
		r.mu.Lock()
		delete(r.teamAsked, t.UID) // asked again at the next look
		r.mu.Unlock()
		return true, fmt.Errorf("asking the idle loop to put team %s to sleep: %w", t.Name, err)
	}
	return true, nil
}
