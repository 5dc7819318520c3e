package idle

import (
	"context"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/gpuvc/gpuvc/manager/teamevents"
)

// listener is the waker of one team: a TCP port the team's Service points at while
// the manager watches or sleeps its vCluster.
type listener struct {
	port int32
	ln   net.Listener
	open sync.WaitGroup
	n    int // connections being proxied; guarded by Sleeper.mu
}

// listen opens the team's waker port: the one its EndpointSlice already names
// (a new leader takes over the old one's port) or a free one of the range.
func (s *Sleeper) listen(v vcluster, want int32) (*listener, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if l := s.listeners[v.team]; l != nil {
		return l, nil
	}
	try := func(port int32) (*listener, error) {
		ln, err := net.Listen("tcp", net.JoinHostPort(s.opts.ListenHost, strconv.Itoa(int(port))))
		if err != nil {
			return nil, err
		}
		l := &listener{port: port, ln: ln}
		s.listeners[v.team] = l
		go s.serve(v, l)
		return l, nil
	}
	if want != 0 {
		if l, err := try(want); err == nil {
			return l, nil
		}
	}
	used := map[int32]bool{}
	for _, l := range s.listeners {
		used[l.port] = true
	}
	for p := s.opts.Ports.First; p <= s.opts.Ports.Last; p++ {
		if used[p] {
			continue
		}
		if l, err := try(p); err == nil {
			return l, nil
		}
	}
	return nil, fmt.Errorf("no free waker port in %d-%d (--waker-ports)", s.opts.Ports.First, s.opts.Ports.Last)
}

// closeListener stops accepting for the team; connections being proxied go on.
func (s *Sleeper) closeListener(team string) {
	s.mu.Lock()
	l := s.listeners[team]
	delete(s.listeners, team)
	s.mu.Unlock()
	if l != nil {
		_ = l.ln.Close()
	}
}

func (s *Sleeper) openConns(team string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if l := s.listeners[team]; l != nil {
		return l.n
	}
	return 0
}

func (s *Sleeper) serve(v vcluster, l *listener) {
	for {
		conn, err := l.ln.Accept()
		if err != nil {
			return // closed
		}
		s.mu.Lock()
		l.n++
		s.mu.Unlock()
		go func() {
			defer func() {
				s.mu.Lock()
				l.n--
				s.mu.Unlock()
			}()
			s.handle(s.ctx, v, conn)
		}()
	}
}

// handle serves one connection to the team's API address: activity unless it
// comes from the team's own system pods; the control plane is woken if it sleeps,
// then the bytes are copied both ways untouched.
func (s *Sleeper) handle(ctx context.Context, v vcluster, conn net.Conn) {
	defer conn.Close()
	logger := log.FromContext(ctx).WithValues("team", v.team, "from", conn.RemoteAddr().String())
	internal, err := s.fromSystemPod(ctx, v, conn.RemoteAddr())
	if err != nil {
		logger.Error(err, "cannot tell whether a waker connection comes from the team's system pods; counting it as activity")
	}
	if !internal {
		s.touch(v.team)
	}
	target, err := s.readyTarget(ctx, v)
	switch {
	case err != nil:
		logger.Error(err, "finding the vCluster control plane for a connection")
		return
	case target == "" && internal:
		return // the team's system pods do not wake it
	case target == "":
		s.answerWhileWaking(ctx, v, conn)
		return
	}
	up, err := s.opts.Dial(ctx, "tcp", target)
	if err != nil {
		logger.Error(err, "connecting to the vCluster control plane", "target", target)
		return
	}
	defer up.Close()
	splice(conn, up)
}

// splice copies both ways until both directions are done, passing half-closes on.
func splice(a, b net.Conn) {
	var wg sync.WaitGroup
	cp := func(dst, src net.Conn) {
		defer wg.Done()
		_, _ = io.Copy(dst, src)
		if c, ok := dst.(interface{ CloseWrite() error }); ok {
			_ = c.CloseWrite()
		} else {
			_ = dst.Close()
		}
	}
	wg.Add(2)
	go cp(a, b)
	go cp(b, a)
	wg.Wait()
}

// fromSystemPod: the connection comes from a pod of the team namespace that is
// not a workload (vCluster's CoreDNS reconnecting its watch is not the team).
func (s *Sleeper) fromSystemPod(ctx context.Context, v vcluster, addr net.Addr) (bool, error) {
	host, _, err := net.SplitHostPort(addr.String())
	if err != nil {
		return false, err
	}
	pods := &corev1.PodList{}
	if err := s.reader.List(ctx, pods, client.InNamespace(v.namespace)); err != nil {
		return false, err
	}
	for _, p := range pods.Items {
		if p.Status.PodIP == host && !isWorkload(&p, v) {
			return true, nil
		}
	}
	return false, nil
}

// ensureAwake returns the address of a ready control plane, waking it first
// when it sleeps (by says what woke it). Concurrent callers share one wake.
func (s *Sleeper) ensureAwake(ctx context.Context, v vcluster, by string) (string, error) {
	if target, err := s.readyTarget(ctx, v); err != nil || target != "" {
		return target, err
	}
	s.mu.Lock()
	w := s.wakes[v.team]
	if w == nil {
		w = &wakeCall{done: make(chan struct{})}
		s.wakes[v.team] = w
		// The wake outlives the connection that started it.
		go func() {
			w.target, w.err = s.wake(s.ctx, v, by)
			s.mu.Lock()
			delete(s.wakes, v.team)
			s.mu.Unlock()
			close(w.done)
		}()
	}
	s.mu.Unlock()
	select {
	case <-w.done:
		return w.target, w.err
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

type wakeCall struct {
	done   chan struct{}
	target string
	err    error
}

// readyTarget is host:port of a ready control-plane pod, "" while none is ready.
func (s *Sleeper) readyTarget(ctx context.Context, v vcluster) (string, error) {
	return teamevents.ControlPlaneAddress(ctx, s.reader, v.namespace, v.release)
}

// waking: a wake of the team is under way (the policy leaves the team alone).
func (s *Sleeper) waking(team string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.wakes[team] != nil
}
