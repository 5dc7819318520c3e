package teamevents

import (
	"context"
	"fmt"
	"net"
	"sync"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpuvc/gpuvc/api/contract"
)

// Sessions keeps, per team, a client of its virtual cluster (TeamConfig)
// between the passes of a periodic loop. Finding a ready control-plane pod and
// reading the team's kubeconfig costs four reads of the host API server
// (StatefulSet, pods, Service, Secret); a loop that did them for every team
// at every pass made most of the manager's requests to the host at rest. A
// session is kept until a request through it fails (the pod went, the
// kubeconfig changed), then found again; a team where none is found is looked
// at again only after a back-off, so a team that is starting or broken costs
// a few reads a minute, not four a pass.
type Sessions struct {
	reader    client.Reader
	dial      func(ctx context.Context, network, address string) (net.Conn, error)
	userAgent string
	clock     clock.PassiveClock
	// MaxBackoff bounds the wait before looking again at a team where no
	// control plane was found.
	maxBackoff time.Duration

	mu    sync.Mutex
	teams map[string]*session // by host namespace
}

type session struct {
	mu       sync.Mutex // one look at a time per team; teams look in parallel
	release  string
	client   kubernetes.Interface
	failures int
	retryAt  time.Time
}

// NewSessions returns sessions that read the host through reader (uncached:
// the manager's cache holds no team Secrets) and dial control-plane pods with
// dial (nil: a net.Dialer with a 5s timeout). Clients say userAgent.
func NewSessions(reader client.Reader, dial func(context.Context, string, string) (net.Conn, error), userAgent string, maxBackoff time.Duration) *Sessions {
	if dial == nil {
		dial = (&net.Dialer{Timeout: 5 * time.Second}).DialContext
	}
	if maxBackoff <= 0 {
		maxBackoff = 5 * time.Minute
	}
	return &Sessions{reader: reader, dial: dial, userAgent: userAgent, clock: clock.RealClock{}, maxBackoff: maxBackoff, teams: map[string]*session{}}
}

// Client is a client of the virtual cluster that release runs in namespace,
// reaching a ready control-plane pod directly (never the Service, which wakes
// a sleeping cluster). Nil without error when none serves, or when the last
// look found none and its back-off has not passed.
func (s *Sessions) Client(ctx context.Context, namespace, release string) (kubernetes.Interface, error) {
	s.mu.Lock()
	se := s.teams[namespace]
	if se == nil || se.release != release {
		se = &session{release: release}
		s.teams[namespace] = se
	}
	s.mu.Unlock()
	se.mu.Lock()
	defer se.mu.Unlock()
	if se.client != nil {
		return se.client, nil
	}
	if s.clock.Now().Before(se.retryAt) {
		return nil, nil
	}
	cfg, err := TeamConfig(ctx, s.reader, s.dial, namespace, release)
	if err != nil || cfg == nil {
		s.backOff(se)
		return nil, err
	}
	cfg.UserAgent = s.userAgent
	cfg.Timeout = 10 * time.Second
	// A local first: a failed NewForConfig's nil *Clientset in the interface
	// field would be a non-nil session that panics at its first use.
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		s.backOff(se)
		return nil, fmt.Errorf("a client of the team's virtual cluster from its kubeconfig %s/%s: %w", namespace, contract.KubeconfigSecretName, err)
	}
	se.client, se.failures = cs, 0
	return se.client, nil
}

// Failed drops namespace's session after a request through it failed (the
// pod may have moved): the control plane is looked for again after the
// back-off — 15 s, a periodic loop's next pass, after one failure, longer
// after failures in a row, so a team whose control plane never answers (its
// pod unreachable from the manager) costs a few host reads an hour, not four
// a pass.
func (s *Sessions) Failed(namespace string) {
	s.mu.Lock()
	se := s.teams[namespace]
	s.mu.Unlock()
	if se != nil {
		se.mu.Lock()
		se.client = nil
		s.backOff(se)
		se.mu.Unlock()
	}
}

// Forget drops what is kept for a team that is gone.
func (s *Sessions) Forget(namespace string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.teams, namespace)
}

// Keep drops the sessions of every namespace keep says no to.
func (s *Sessions) Keep(keep func(namespace string) bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for ns := range s.teams {
		if !keep(ns) {
			delete(s.teams, ns)
		}
	}
}

// backOff: 15s after the first look that found nothing, doubling up to
// maxBackoff. Called with se.mu held.
func (s *Sessions) backOff(se *session) {
	se.failures++
	wait := 15 * time.Second << min(se.failures-1, 8)
	se.retryAt = s.clock.Now().Add(min(wait, s.maxBackoff))
}
