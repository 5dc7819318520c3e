package idle

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/gpuvc/gpuvc/api/contract"
	gpuvcv1 "github.com/gpuvc/gpuvc/api/v1alpha1"
)

// Utilization says how busy the GPUs a pod holds are. manager/agentmetrics
// implements it from the node agents' metrics; the manager runs the GPU-pod
// policy only when the agents' metrics are on (--agent-metrics-port).
type Utilization interface {
	// PodGPUUtilization is the pod's GPU utilization in percent (the busiest of
	// its GPUs) at the last sample; known is false when nothing is known of the pod.
	PodGPUUtilization(ctx context.Context, namespace, pod string) (percent float64, known bool, err error)
}

// GPUPodReaper applies spec.idle.gpuPods: a pod whose GPUs stay at or below
// maxUtilizationPercent for `after` gets a GPUIdle event (on the host pod; vCluster
// copies it to the team's pod), and with action Evict is then evicted, which
// returns its GPUs to the team's quota. Each pod is acted on once per idle spell.
type GPUPodReaper struct {
	client   client.Client
	reader   client.Reader
	recorder events.EventRecorder
	util     Utilization
	clock    clock.PassiveClock

	mu        sync.Mutex
	idleSince map[types.UID]time.Time
	acted     map[types.UID]bool
	// teamAsked: teams (action Sleep) asked to sleep in their current idle spell.
	teamAsked map[types.UID]bool
}

// NewGPUPodReaper returns a reaper reading utilization from util.
func NewGPUPodReaper(c client.Client, reader client.Reader, recorder events.EventRecorder, util Utilization, clk clock.PassiveClock) *GPUPodReaper {
	if clk == nil {
		clk = clock.RealClock{}
	}
	return &GPUPodReaper{client: c, reader: reader, recorder: recorder, util: util, clock: clk,
		idleSince: map[types.UID]time.Time{}, acted: map[types.UID]bool{}, teamAsked: map[types.UID]bool{}}
}

// Run ticks every interval until ctx ends; the manager runs it on the leader.
func (r *GPUPodReaper) Run(ctx context.Context, interval time.Duration) {
	wait.UntilWithContext(ctx, r.Tick, interval)
}

// Tick looks at the GPU pods of every team with a GPU-pod idle policy once.
func (r *GPUPodReaper) Tick(ctx context.Context) {
	teams := &gpuvcv1.TeamList{}
	if err := r.client.List(ctx, teams); err != nil {
		log.FromContext(ctx).Error(err, "idle GPU pods: listing teams")
		return
	}
	seen, sleepers := map[types.UID]bool{}, map[types.UID]bool{}
	for i := range teams.Items {
		t := &teams.Items[i]
		if t.Spec.Idle == nil || t.Spec.Idle.GPUPods == nil || !t.DeletionTimestamp.IsZero() {
			continue
		}
		sleepers[t.UID] = t.Spec.Idle.GPUPods.Action == gpuvcv1.IdleActionSleep
		if err := r.tickTeam(ctx, t, seen); err != nil && ctx.Err() == nil {
			log.FromContext(ctx).Error(err, "idle GPU pods", "team", t.Name)
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for uid := range r.idleSince {
		if !seen[uid] {
			delete(r.idleSince, uid)
			delete(r.acted, uid)
		}
	}
	for uid := range r.teamAsked {
		if !sleepers[uid] {
			delete(r.teamAsked, uid)
		}
	}
}

func (r *GPUPodReaper) tickTeam(ctx context.Context, t *gpuvcv1.Team, seen map[types.UID]bool) error {
	policy := t.Spec.Idle.GPUPods
	pods := &corev1.PodList{}
	if err := r.reader.List(ctx, pods, client.InNamespace(gpuvcv1.HostNamespace(t.Name))); err != nil {
		return err
	}
	now := r.clock.Now()
	var looks []podLook
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.DeletionTimestamp != nil || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed || !holdsGPU(p) {
			continue
		}
		if p.Status.Phase != corev1.PodRunning {
			looks = append(looks, podLook{pod: p, state: podStarting})
			continue
		}
		percent, known, err := r.utilizationOf(ctx, p)
		if err != nil || !known {
			looks = append(looks, podLook{pod: p, state: podUnknown}) // unknown is not idle
			continue
		}
		seen[p.UID] = true
		r.mu.Lock()
		if percent > float64(policy.MaxUtilizationPercent) {
			delete(r.idleSince, p.UID)
			delete(r.acted, p.UID)
			r.mu.Unlock()
			looks = append(looks, podLook{pod: p, state: podBusy, percent: percent})
			continue
		}
		since, ok := r.idleSince[p.UID]
		if !ok {
			since = now
			r.idleSince[p.UID] = now
		}
		look := podLook{pod: p, state: podIdle, percent: percent, idleFor: now.Sub(since)}
		look.due = look.idleFor >= policy.After.Duration && !r.acted[p.UID]
		r.mu.Unlock()
		looks = append(looks, look)
	}
	if policy.Action == gpuvcv1.IdleActionSleep {
		if done, err := r.sleepIfWholeTeamIdle(ctx, t, looks); done || err != nil {
			return err
		}
	}
	for _, l := range looks {
		if !l.due {
			continue
		}
		r.mu.Lock()
		r.acted[l.pod.UID] = true
		r.mu.Unlock()
		if err := r.act(ctx, l.pod, policy, l.idleFor, l.percent, looks); err != nil {
			return err
		}
	}
	return nil
}

// utilizationOf asks for the pod's own GPUs, or for a share pod for the GPU its
// reservation pod (LabelShareGroup, same namespace) holds: the whole GPU's
// utilization bounds each share's, so an idle shared GPU means every share on
// it is idle, while a busy one says nothing of a single share (none is idle).
func (r *GPUPodReaper) utilizationOf(ctx context.Context, p *corev1.Pod) (float64, bool, error) {
	name := p.Name
	if p.Annotations[contract.AnnotationShareUnits] != "" {
		if name = p.Labels[contract.LabelShareGroup]; name == "" {
			return 0, false, nil // not bound to a reservation yet
		}
	}
	return r.util.PodGPUUtilization(ctx, p.Namespace, name)
}

func (r *GPUPodReaper) act(ctx context.Context, p *corev1.Pod, policy *gpuvcv1.GPUPodIdle, idleFor time.Duration, percent float64, team []podLook) error {
	msg := idleMessage(p, policy, idleFor, percent)
	switch policy.Action {
	case gpuvcv1.IdleActionSleep:
		_, why := wholeTeamIdle(team, policy.After.Duration)
		r.recorder.Eventf(p, nil, corev1.EventTypeWarning, "GPUIdle", "Notify",
			"%s; it keeps running: with action Sleep the team's pods are evicted and its vCluster put to sleep only once every GPU pod of the team is idle, and %s", msg, why)
		return nil
	case gpuvcv1.IdleActionEvict:
	default:
		r.recorder.Eventf(p, nil, corev1.EventTypeWarning, "GPUIdle", "Notify", "%s; it keeps running (action Notify)", msg)
		return nil
	}
	r.recorder.Eventf(p, nil, corev1.EventTypeWarning, "GPUIdle", "Evict", "%s; evicting it to return its GPUs to the team's quota (action Evict)", msg)
	ev := &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace}}
	return client.IgnoreNotFound(r.client.SubResource("eviction").Create(ctx, p, ev))
}

// idleMessage says what was idle, how long, against which policy.
func idleMessage(p *corev1.Pod, policy *gpuvcv1.GPUPodIdle, idleFor time.Duration, percent float64) string {
	what := "the pod's GPUs have"
	if g := p.Labels[contract.LabelShareGroup]; p.Annotations[contract.AnnotationShareUnits] != "" && g != "" {
		what = fmt.Sprintf("the shared GPU (held by reservation pod %s, for every share on it) has", g)
	}
	return fmt.Sprintf("%s been at or below %d%% utilization (now %.0f%%) for %v (team policy spec.idle.gpuPods.after %v)",
		what, policy.MaxUtilizationPercent, percent, idleFor.Round(time.Second), policy.After.Duration)
}

// holdsGPU: a workload pod with a GPU or MIG request, or a fractional share;
// reservation pods hold GPUs for shares and are never reaped themselves.
func holdsGPU(p *corev1.Pod) bool {
	if p.Labels[contract.LabelRole] == contract.RoleReservation {
		return false
	}
	if p.Annotations[contract.AnnotationShareUnits] != "" {
		return true
	}
	for _, c := range p.Spec.Containers {
		for name, q := range c.Resources.Limits {
			if (name == contract.ResourceGPU || strings.HasPrefix(string(name), contract.ResourceMIGPrefix)) && !q.IsZero() {
				return true
			}
		}
	}
	return false
}
