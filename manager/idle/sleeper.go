package idle

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/gpuvc/gpuvc/api/teamstatus"
	gpuvcv1 "github.com/gpuvc/gpuvc/api/v1alpha1"
	"github.com/gpuvc/gpuvc/manager/teamevents"
)

// PortRange is an inclusive range of TCP ports.
type PortRange struct{ First, Last int32 }

// Options configure the Sleeper. Zero fields take the defaults.
type Options struct {
	// Clock drives idleness; tests pass a FakeClock. Default: the real clock.
	Clock clock.Clock
	// Interval between looks at every team. Default 30s.
	Interval time.Duration
	// Probe is how long before sleepAfter the waker starts counting connections
	// (at most half of sleepAfter). Default 5m.
	Probe time.Duration
	// WakerIP is the address of this manager the teams' Services are pointed at
	// (its pod IP). Empty: vCluster sleep is off, and Teams asking for it say so.
	WakerIP string
	// ListenHost is where waker ports listen. Default: every address.
	ListenHost string
	// Ports the waker may listen on, one per watched team. Default 40000-40999.
	Ports PortRange
	// WakeTimeout bounds a wake: scale up, ready pod. Default 5m.
	WakeTimeout time.Duration
	// EndpointsWait bounds the wait for the control plane's endpoints before the
	// waker's EndpointSlice is removed. Default 10s.
	EndpointsWait time.Duration
	// HoldMax bounds how long the waker holds a request while the control plane
	// starts before it answers 503 Retry-After anyway (kubectl's discovery gives
	// up after 32 s; the retry is held again). Default 20s.
	HoldMax time.Duration
	// RouteSettle is how long `gpuvc team sleep` waits between routing the
	// Service to the waker and scaling the control plane down, for kube-proxy to
	// program the waker's endpoint (the idle path has its probe window). Default 5s.
	RouteSettle time.Duration
	// PollInterval of waits for a ready control plane. Default 250ms.
	PollInterval time.Duration
	// Dial connects the waker to the control plane. Default: a net.Dialer with a
	// 10s timeout; tests stand in for a control plane where no container runs.
	Dial func(ctx context.Context, network, address string) (net.Conn, error)
	// TeamEvents, when set, tells each team in its own virtual cluster what the
	// policy did (teamevents: written before the control plane scales to zero,
	// held while it sleeps).
	TeamEvents *teamevents.Recorder
}

func (o Options) withDefaults() Options {
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.Interval <= 0 {
		o.Interval = 30 * time.Second
	}
	if o.Probe <= 0 {
		o.Probe = 5 * time.Minute
	}
	if o.Ports.First == 0 {
		o.Ports = PortRange{40000, 40999}
	}
	if o.WakeTimeout <= 0 {
		o.WakeTimeout = 5 * time.Minute
	}
	if o.EndpointsWait <= 0 {
		o.EndpointsWait = 10 * time.Second
	}
	if o.HoldMax <= 0 {
		o.HoldMax = 20 * time.Second
	}
	if o.RouteSettle <= 0 {
		o.RouteSettle = 5 * time.Second
	}
	if o.PollInterval <= 0 {
		o.PollInterval = 250 * time.Millisecond
	}
	if o.Dial == nil {
		o.Dial = (&net.Dialer{Timeout: 10 * time.Second}).DialContext
	}
	return o
}

// Sleeper applies every Team's spec.idle.vcluster. It runs on the leader only (a
// manager Runnable): the teams' Services point at the leader's waker.
type Sleeper struct {
	client   client.Client // Teams (cached), writes
	reader   client.Reader // uncached reads of Services, pods, slices
	recorder events.EventRecorder
	opts     Options
	ctx      context.Context // of Start; connections are served under it

	poke         chan struct{}
	mu           sync.Mutex
	lastActivity map[string]time.Time // per team
	listeners    map[string]*listener
	wakes        map[string]*wakeCall
	// sleptWhy is why each sleeping team was put to sleep, for its Awake event
	// (the Asleep condition's message says only that it sleeps); lost with a
	// restart, when the event says since when alone.
	sleptWhy map[string]string
}

// New returns a Sleeper; add it to a manager with mgr.Add.
func New(c client.Client, reader client.Reader, recorder events.EventRecorder, opts Options) *Sleeper {
	return &Sleeper{client: c, reader: reader, recorder: recorder, opts: opts.withDefaults(), ctx: context.Background(), poke: make(chan struct{}, 1),
		lastActivity: map[string]time.Time{}, listeners: map[string]*listener{}, wakes: map[string]*wakeCall{}, sleptWhy: map[string]string{}}
}

// Start looks at every team now and then every Interval until ctx ends.
func (s *Sleeper) Start(ctx context.Context) error {
	s.ctx = ctx
	defer func() {
		s.mu.Lock()
		teams := make([]string, 0, len(s.listeners))
		for t := range s.listeners {
			teams = append(teams, t)
		}
		s.mu.Unlock()
		for _, t := range teams {
			s.closeListener(t)
		}
	}()
	for {
		s.Tick(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-s.opts.Clock.After(s.opts.Interval):
		case <-s.poke:
		}
	}
}

// Poke makes the running Sleeper look at every team now (a Team asks for sleep
// or wake), instead of at the next Interval.
func (s *Sleeper) Poke() {
	select {
	case s.poke <- struct{}{}:
	default:
	}
}

// Tick applies the policy to every team once.
func (s *Sleeper) Tick(ctx context.Context) {
	teams := &gpuvcv1.TeamList{}
	if err := s.client.List(ctx, teams); err != nil {
		log.FromContext(ctx).Error(err, "idle policy: listing teams")
		return
	}
	for i := range teams.Items {
		t := &teams.Items[i]
		if !t.DeletionTimestamp.IsZero() {
			s.closeListener(t.Name)
			continue
		}
		if err := s.tickTeam(ctx, t); err != nil && ctx.Err() == nil {
			log.FromContext(ctx).Error(err, "idle policy", "team", t.Name)
		}
		// What waited for the team's control plane, retried at each look (no
		// request when nothing waits).
		s.opts.TeamEvents.Flush(ctx, t)
	}
}

// Touch records activity of a team now (what a connection to its waker does).
func (s *Sleeper) touch(team string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lastActivity[team] = s.opts.Clock.Now()
}

// activity is the team's last activity; a team seen for the first time counts
// from now, so a manager restart only postpones sleep.
func (s *Sleeper) activity(team string) time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.lastActivity[team]
	if !ok {
		t = s.opts.Clock.Now()
		s.lastActivity[team] = t
	}
	return t
}

func (s *Sleeper) tickTeam(ctx context.Context, t *gpuvcv1.Team) error {
	v := vclusterOf(t)
	var sleepAfter time.Duration
	if t.Spec.Idle != nil && t.Spec.Idle.VCluster != nil {
		sleepAfter = t.Spec.Idle.VCluster.SleepAfter.Duration
	}
	if sleepAfter == 0 && t.Status.Idle == nil && apimeta.FindStatusCondition(t.Status.Conditions, gpuvcv1.ConditionAsleep) == nil {
		return nil // never asked for: nothing of ours to undo, no reads
	}
	if sleepAfter != 0 && s.opts.WakerIP == "" {
		return s.setCondition(ctx, t, false, gpuvcv1.ReasonAwake,
			"vCluster sleep is off: the manager has no waker address (gpuvc manager --waker-address, POD_IP in the chart)", nil)
	}
	if s.waking(t.Name) {
		return nil // the wake routes the Service back itself once the control plane is ready
	}
	st, err := s.observe(ctx, v)
	if err != nil {
		if sleepAfter == 0 {
			return nil // nothing asked, nothing to undo we can see
		}
		return err
	}
	if st.routed {
		// A new leader, or a restart: the Service already points at a waker port.
		port, err := s.wakerPort(ctx, v)
		if err != nil {
			return err
		}
		l, err := s.listen(v, port)
		if err != nil {
			return err
		}
		if err := s.route(ctx, v, l.port); err != nil { // the slice names this leader
			return err
		}
	}
	if !st.routed && s.openConns(t.Name) == 0 {
		s.closeListener(t.Name)
	}
	if st.workloadPods > 0 {
		s.touch(t.Name)
	}
	if acted, err := s.handleRequest(ctx, t, v, st, sleepAfter != 0); acted || err != nil {
		return err
	}
	probe := min(s.opts.Probe, sleepAfter/2)
	act, reason, msg := decide(input{now: s.opts.Clock.Now(), lastActivity: s.activity(t.Name), sleepAfter: sleepAfter,
		probe: probe, openConns: s.openConns(t.Name), state: st})
	switch act {
	case actRoute:
		l, err := s.listen(v, 0)
		if err != nil {
			return err
		}
		if err := s.route(ctx, v, l.port); err != nil {
			return err
		}
		s.event(ctx, t, corev1.EventTypeNormal, "Drowsy", "Route", msg)
	case actUnroute:
		if err := s.unroute(ctx, v); err != nil {
			return err
		}
		s.event(ctx, t, corev1.EventTypeNormal, "Awake", "Unroute", msg)
	case actSleep:
		s.tellTeamAsleep(ctx, t, msg)
		if err := s.sleep(ctx, v); err != nil {
			return err
		}
		s.hostEvent(t, corev1.EventTypeNormal, "Asleep", "Sleep", "vCluster control plane scaled to zero: "+msg)
		return s.setCondition(ctx, t, true, reason, msg, func(st *gpuvcv1.IdleStatus) { st.AsleepSince = nowTime(s) })
	case actWake:
		s.event(ctx, t, corev1.EventTypeNormal, "Waking", "Wake", msg)
		if _, err := s.ensureAwake(ctx, v, byPolicy); err != nil {
			return err
		}
		return nil // wake wrote the condition
	}
	if reason == "" {
		return s.clearCondition(ctx, t)
	}
	if act == actNone && reason == gpuvcv1.ReasonAsleep && !reasonChanged(t, reason) {
		return nil // the message written at the sleep says why it sleeps
	}
	return s.setCondition(ctx, t, reason == gpuvcv1.ReasonAsleep, reason, msg, nil)
}

// sleep scales the control plane to zero and deletes vCluster's system pods on
// the host (its CoreDNS would otherwise reconnect to the waker forever).
func (s *Sleeper) sleep(ctx context.Context, v vcluster) error {
	if err := s.scale(ctx, v, 0); err != nil {
		return err
	}
	pods := &corev1.PodList{}
	if err := s.reader.List(ctx, pods, client.InNamespace(v.namespace)); err != nil {
		return err
	}
	for i := range pods.Items {
		if p := &pods.Items[i]; isSystemPod(p) {
			if err := s.client.Delete(ctx, p); client.IgnoreNotFound(err) != nil {
				return err
			}
		}
	}
	return nil
}

// Why a control plane is woken (ensureAwake's by): the Awake event and
// condition say it.
const (
	byConnection = "a connection"
	byRequest    = "request (gpuvc team wake)"
	byPolicy     = "the idle policy"
)

// wake scales the control plane back, waits for a ready pod, routes the Service
// back to it and records how long it took and what woke it (by).
func (s *Sleeper) wake(ctx context.Context, v vcluster, by string) (string, error) {
	began := s.opts.Clock.Now()
	t := &gpuvcv1.Team{}
	if err := s.client.Get(ctx, client.ObjectKey{Name: v.team}, t); err != nil {
		return "", err
	}
	waking := "woken by " + by + ": the control plane is starting"
	if by == byConnection {
		waking = "a connection arrived: the control plane is starting"
	}
	_ = s.setCondition(ctx, t, true, gpuvcv1.ReasonWaking, waking, nil)
	if err := s.scale(ctx, v, 1); err != nil {
		return "", err
	}
	var target string
	err := s.poll(ctx, s.opts.WakeTimeout, func(ctx context.Context) (bool, error) {
		var err error
		target, err = s.readyTarget(ctx, v)
		return target != "", err
	})
	if err != nil {
		msg := fmt.Sprintf("the control plane did not become ready within %v: %v", s.opts.WakeTimeout, err)
		s.event(ctx, t, corev1.EventTypeWarning, "WakeFailed", "Wake", msg)
		return "", errors.New(msg)
	}
	latency := s.opts.Clock.Since(began)
	s.touch(v.team)
	// The Service goes back to the control plane in the background: this
	// connection is proxied already.
	// The waker keeps listening (and proxying to the woken control plane) until a
	// later look finds the Service routed back and no connection open: clients
	// whose retry kube-proxy still sends to the waker are served.
	go func() {
		if err := s.unroute(s.ctx, v); err != nil {
			log.FromContext(ctx).Error(err, "routing the Service back to the woken control plane", "team", v.team)
		}
	}()
	msg := fmt.Sprintf("woken by %s in %v", by, latency.Round(time.Millisecond))
	s.hostEvent(t, corev1.EventTypeNormal, "Awake", "Wake", msg)
	s.mu.Lock()
	why := s.sleptWhy[t.Name]
	delete(s.sleptWhy, t.Name)
	s.mu.Unlock()
	s.opts.TeamEvents.Record(ctx, t, corev1.EventTypeNormal, "Awake", "Wake", msg+sleptFor(t, why))
	_ = s.setCondition(ctx, t, false, gpuvcv1.ReasonAwake, msg, func(st *gpuvcv1.IdleStatus) {
		st.AsleepSince = nil
		st.LastWake = &gpuvcv1.Wake{At: metav1.NewTime(began), Latency: metav1.Duration{Duration: latency}}
	})
	return target, nil
}

// sleptFor says, for the team's Awake event, since when (from t as it was
// before the wake) and why (what this manager told the team then) its cluster
// slept: a vCluster with an ephemeral datastore (a Deployment) comes back
// empty, without the Asleep event it was told before the scale to zero.
func sleptFor(t *gpuvcv1.Team, why string) string {
	var since string
	if t.Status.Idle != nil && t.Status.Idle.AsleepSince != nil {
		since = " since " + t.Status.Idle.AsleepSince.UTC().Format(time.RFC3339)
	}
	if why != "" {
		why = " (" + why + ")"
	}
	if since == "" && why == "" {
		return ""
	}
	return "; it was asleep" + since + why
}

func (s *Sleeper) poll(ctx context.Context, timeout time.Duration, f wait.ConditionWithContextFunc) error {
	return wait.PollUntilContextTimeout(ctx, s.opts.PollInterval, timeout, true, f)
}

// event records a decision on the host Team and in the team's own virtual
// cluster (where it waits, held, while the control plane sleeps).
func (s *Sleeper) event(ctx context.Context, t *gpuvcv1.Team, typ, reason, action, msg string) {
	s.hostEvent(t, typ, reason, action, msg)
	s.opts.TeamEvents.Record(ctx, t, typ, reason, action, msg)
}

// hostEvent records on the host Team only: what the platform engineer did
// wrong, or what the team was told already.
func (s *Sleeper) hostEvent(t *gpuvcv1.Team, typ, reason, action, msg string) {
	if s.recorder != nil {
		s.recorder.Eventf(t, nil, typ, reason, action, "%s", msg)
	}
}

// tellTeamAsleep tells the team its vCluster goes to sleep while its control
// plane still serves: once it is scaled to zero, any write would wait for the
// next wake.
func (s *Sleeper) tellTeamAsleep(ctx context.Context, t *gpuvcv1.Team, why string) {
	s.mu.Lock()
	s.sleptWhy[t.Name] = why
	s.mu.Unlock()
	s.opts.TeamEvents.Record(ctx, t, corev1.EventTypeNormal, "Asleep", "Sleep",
		"the virtual cluster goes to sleep now (its control plane is scaled to zero): "+why+
			"; the next request through your kubeconfig wakes it and waits until it serves")
}

// setCondition writes the Asleep condition and status.idle when they change. It
// reads the Team from the API server, not the cache, so it writes only on a
// change of what it owns; the write carries those fields alone (teamstatus), so
// it never undoes the Team reconciler's conditions, nor they it.
func (s *Sleeper) setCondition(ctx context.Context, t *gpuvcv1.Team, asleep bool, reason, msg string, edit func(*gpuvcv1.IdleStatus)) error {
	latest := &gpuvcv1.Team{}
	if err := s.reader.Get(ctx, client.ObjectKeyFromObject(t), latest); err != nil {
		return client.IgnoreNotFound(err)
	}
	want := latest.DeepCopy()
	status := metav1.ConditionFalse
	if asleep {
		status = metav1.ConditionTrue
	}
	apimeta.SetStatusCondition(&want.Status.Conditions, metav1.Condition{Type: gpuvcv1.ConditionAsleep, Status: status,
		Reason: reason, Message: msg, ObservedGeneration: want.Generation, LastTransitionTime: metav1.NewTime(s.opts.Clock.Now())})
	if want.Status.Idle == nil {
		want.Status.Idle = &gpuvcv1.IdleStatus{}
	}
	if last, ok := s.lastActivityOf(t.Name); ok {
		// Written with the condition only: a write per connection would wake the
		// Team reconciler each time.
		if want.Status.Idle.LastActivity == nil || reasonChanged(latest, reason) {
			want.Status.Idle.LastActivity = &metav1.Time{Time: last}
		}
	}
	if edit != nil {
		edit(want.Status.Idle)
	}
	_, err := teamstatus.Idle.Apply(ctx, s.client, latest, want)
	return client.IgnoreNotFound(err)
}

func (s *Sleeper) lastActivityOf(team string) (time.Time, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.lastActivity[team]
	return t, ok
}

func reasonChanged(t *gpuvcv1.Team, reason string) bool {
	c := apimeta.FindStatusCondition(t.Status.Conditions, gpuvcv1.ConditionAsleep)
	return c == nil || c.Reason != reason
}

// clearCondition removes what the idle policy reported once a Team no longer asks for it.
func (s *Sleeper) clearCondition(ctx context.Context, t *gpuvcv1.Team) error {
	if apimeta.FindStatusCondition(t.Status.Conditions, gpuvcv1.ConditionAsleep) == nil && t.Status.Idle == nil {
		return nil
	}
	latest := &gpuvcv1.Team{}
	if err := s.reader.Get(ctx, client.ObjectKeyFromObject(t), latest); err != nil {
		return client.IgnoreNotFound(err)
	}
	want := latest.DeepCopy()
	apimeta.RemoveStatusCondition(&want.Status.Conditions, gpuvcv1.ConditionAsleep)
	want.Status.Idle = nil
	_, err := teamstatus.Idle.Apply(ctx, s.client, latest, want)
	return client.IgnoreNotFound(err)
}

func nowTime(s *Sleeper) *metav1.Time {
	now := metav1.NewTime(s.opts.Clock.Now())
	return &now
}
