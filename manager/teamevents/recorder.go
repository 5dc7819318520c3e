package teamevents

import (
	"context"
	"fmt"
	"net"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	gpuvcv1 "github.com/gpuvc/gpuvc/api/v1alpha1"
)

// Component is the source every team event names (`kubectl get events` FROM).
const Component = "gpuvc"

// Namespace is the virtual namespace the events are written in, on its
// Namespace object: every vCluster has it and a team's kubeconfig reads it.
const Namespace = "default"

// Options configure a Recorder. Zero fields take the defaults.
type Options struct {
	// Clock stamps each event with the time it was decided. Default: the real clock.
	Clock clock.PassiveClock
	// Dial connects to a control-plane pod. Default: a net.Dialer with a 5s
	// timeout; tests stand in for a control plane where no container runs.
	Dial func(ctx context.Context, network, address string) (net.Conn, error)
	// Held bounds the events held per team while its control plane does not
	// serve; older ones are dropped first. Default 20.
	Held int
	// WriteTimeout bounds writing one team's events. Default 5s.
	WriteTimeout time.Duration
}

// Recorder writes team events into the teams' virtual clusters. Its methods
// never fail the caller's work: what cannot be written now is held.
type Recorder struct {
	opts    Options
	connect func(ctx context.Context, namespace, release string) (sink, error)

	mu    sync.Mutex
	teams map[string]*held
	seq   uint64 // makes event names unique when the clock stands still
}

// sink creates events in one virtual cluster; Close lets its connections go.
type sink interface {
	Create(ctx context.Context, ev *corev1.Event) error
	Close()
}

// held is one team's events not written yet; its mutex keeps them in order.
type held struct {
	mu                 sync.Mutex
	namespace, release string
	events             []*corev1.Event
	dropped            int
	// After a failed connection or write, no try before retryAt: a control
	// plane that does not answer costs the caller a timeout once, not at every
	// reconcile.
	failures int
	retryAt  time.Time
}

// New returns a Recorder reading the teams' kubeconfigs and control planes
// through reader (uncached: the manager's cache holds no team Secrets).
func New(reader client.Reader, opts Options) *Recorder {
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.Dial == nil {
		opts.Dial = (&net.Dialer{Timeout: 5 * time.Second}).DialContext
	}
	if opts.Held <= 0 {
		opts.Held = 20
	}
	if opts.WriteTimeout <= 0 {
		opts.WriteTimeout = 5 * time.Second
	}
	r := &Recorder{opts: opts, teams: map[string]*held{}}
	r.connect = func(ctx context.Context, namespace, release string) (sink, error) {
		return connect(ctx, reader, opts.Dial, namespace, release)
	}
	return r
}

// Record tells team t's virtual cluster of a decision: typ is
// corev1.EventTypeNormal or Warning, reason a CamelCase word, action what gpuvc
// did, msg what the team can do about it. It writes the team's held events and
// this one now if the control plane serves, and holds them otherwise. A nil
// Recorder records nothing.
func (r *Recorder) Record(ctx context.Context, t *gpuvcv1.Team, typ, reason, action, msg string) {
	if r == nil {
		return
	}
	h, seq := r.heldOf(t)
	now := metav1.NewTime(r.opts.Clock.Now())
	ev := &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: fmt.Sprintf("gpuvc.%x.%d", now.UnixNano(), seq), Namespace: Namespace},
		InvolvedObject: corev1.ObjectReference{APIVersion: "v1", Kind: "Namespace", Name: Namespace},
		Type:           typ, Reason: reason, Action: action, Message: msg,
		Source:              corev1.EventSource{Component: Component},
		ReportingController: "gpuvc.dev/manager",
		ReportingInstance:   "gpuvc-manager",
		FirstTimestamp:      now, LastTimestamp: now, Count: 1,
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.events = append(h.events, ev)
	if over := len(h.events) - r.opts.Held; over > 0 {
		h.events = h.events[over:]
		h.dropped += over
	}
	r.write(ctx, t.Name, h)
}

// Flush writes team t's held events if its control plane serves (a wake
// completed, a reconcile of a ready team). Nothing held: no request at all.
func (r *Recorder) Flush(ctx context.Context, t *gpuvcv1.Team) {
	if r == nil {
		return
	}
	h, _ := r.heldOf(t)
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.events) > 0 {
		r.write(ctx, t.Name, h)
	}
}

// Held is how many of team's events wait for its control plane.
func (r *Recorder) Held(team string) int {
	if r == nil {
		return 0
	}
	r.mu.Lock()
	h := r.teams[team]
	r.mu.Unlock()
	if h == nil {
		return 0
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.events)
}

// Forget drops what is held for a deleted team.
func (r *Recorder) Forget(team string) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.teams, team)
}

// heldOf is t's held events and the next event sequence number.
func (r *Recorder) heldOf(t *gpuvcv1.Team) (*held, uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seq++
	h := r.teams[t.Name]
	if h == nil {
		h = &held{}
		r.teams[t.Name] = h
	}
	h.namespace, h.release = gpuvcv1.HostNamespace(t.Name), gpuvcv1.ReleaseName(t)
	return h, r.seq
}

// write sends h's events in order, stopping at the first that fails; the rest
// stay held. Called with h.mu held.
func (r *Recorder) write(ctx context.Context, team string, h *held) {
	if r.opts.Clock.Now().Before(h.retryAt) {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, r.opts.WriteTimeout)
	defer cancel()
	logger := log.FromContext(ctx).WithValues("team", team)
	s, err := r.connect(ctx, h.namespace, h.release)
	if err != nil {
		r.failed(h)
		logger.Error(err, "reaching the team's virtual cluster for its events; holding them", "held", len(h.events), "retryAt", h.retryAt)
		return
	}
	if s == nil {
		return // the control plane does not serve: asleep or starting
	}
	defer s.Close()
	if h.dropped > 0 {
		logger.Info("team events dropped while its control plane did not serve", "dropped", h.dropped)
		h.dropped = 0
	}
	for len(h.events) > 0 {
		// AlreadyExists: an earlier try was written though its answer was lost.
		if err := s.Create(ctx, h.events[0]); err != nil && !apierrors.IsAlreadyExists(err) {
			r.failed(h)
			logger.Error(err, "writing an event into the team's virtual cluster; holding it", "reason", h.events[0].Reason, "retryAt", h.retryAt)
			return
		}
		h.events = h.events[1:]
	}
	h.failures = 0
}

// failed backs h off: 5s after the first failure, doubling up to 5m.
func (r *Recorder) failed(h *held) {
	h.failures++
	wait := 5 * time.Second << min(h.failures-1, 6)
	h.retryAt = r.opts.Clock.Now().Add(min(wait, 5*time.Minute))
}
