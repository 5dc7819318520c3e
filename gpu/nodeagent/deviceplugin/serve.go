package deviceplugin

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/go-logr/logr"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"github.com/gpuvc/gpuvc/gpu/inventory"
)

const (
	// DefaultDir is the kubelet's device-plugin folder.
	DefaultDir = "/var/lib/kubelet/device-plugins"
	// KubeletSocket is the kubelet's Registration socket inside the folder.
	KubeletSocket = "kubelet.sock"
	// registerTimeout bounds one Register call.
	registerTimeout = 10 * time.Second
	// firstRetry is the first wait after a failed registration.
	firstRetry = 50 * time.Millisecond
)

// Options configure Serve.
type Options struct {
	// Dir is the kubelet's device-plugin folder; empty means DefaultDir.
	Dir       string
	Inventory inventory.Inventory
	// Health, if set, is the devices' health (Health.SetUnhealthy); nil means
	// every device stays healthy.
	Health *Health
	// RetryInterval is the longest wait before retrying a failed registration
	// (the kubelet is not up yet, or refused); zero means 5s. Retries start
	// at 50ms and double up to it: kubelet.sock appears (bind) a moment
	// before the kubelet listens on it.
	RetryInterval time.Duration
}

// Serve runs one device-plugin gRPC server per resource of the inventory on
// a socket in Dir, registers each with the kubelet's Registration service on
// Dir/kubelet.sock, and keeps them registered until ctx ends, when it stops the
// servers, removes their sockets and returns nil.
//
// A kubelet restart deletes the plugin sockets and recreates kubelet.sock;
// Serve watches Dir (inotify) and, when kubelet.sock is created, restarts its
// servers if their sockets are gone and registers again. Failed registrations are retried after 50ms,
// doubling up to RetryInterval.
func Serve(ctx context.Context, o Options) error {
	dir := o.Dir
	if dir == "" {
		dir = DefaultDir
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return fmt.Errorf("device-plugin folder %s is not a folder the kubelet uses (mount the kubelet's %s): %v", dir, DefaultDir, errOr(err, "not a directory"))
	}
	resources := Resources(o.Inventory)
	if len(resources) == 0 {
		return errors.New("the inventory has no GPU or MIG device: nothing to advertise")
	}
	maxRetry := o.RetryInterval
	if maxRetry <= 0 {
		maxRetry = 5 * time.Second
	}
	retry := firstRetry
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("watching %s: %w", dir, err)
	}
	defer w.Close()
	if err := w.Add(dir); err != nil {
		return fmt.Errorf("watching %s: %w", dir, err)
	}

	s := &session{dir: dir, resources: resources, health: o.Health, log: logr.FromContextOrDiscard(ctx)}
	defer s.stop()
	if err := s.start(); err != nil {
		return err
	}
	timer := time.NewTimer(0) // register at once
	defer timer.Stop()
	watchErrs := w.Errors
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-w.Events:
			if !ok {
				return errors.New("device-plugin folder watch closed")
			}
			if filepath.Base(ev.Name) != KubeletSocket || !ev.Has(fsnotify.Create) {
				continue
			}
			if s.socketsIntact() {
				// A kubelet that started after the plugin and left its
				// sockets alone: only register again.
				s.log.Info("kubelet socket created: registering again")
				s.pending = append([]Resource(nil), s.resources...)
			} else {
				// A real kubelet deletes the plugin sockets when it starts.
				s.log.Info("kubelet socket created and plugin sockets gone: the kubelet restarted; restarting the device plugins")
				s.stop()
				if err := s.start(); err != nil {
					return err
				}
			}
			retry = firstRetry
			timer.Reset(0)
		case err, ok := <-watchErrs:
			if !ok {
				watchErrs = nil // closed: never ready again
				continue
			}
			s.log.Error(err, "watching the device-plugin folder")
		case <-timer.C:
			err := s.registerPending(ctx)
			if err == nil || ctx.Err() != nil {
				retry = firstRetry
				continue
			}
			s.log.Error(err, "registering with the kubelet failed; retrying", "in", retry)
			timer.Reset(retry)
			retry = min(2*retry, maxRetry)
		}
	}
}

func errOr(err error, s string) string {
	if err != nil {
		return err.Error()
	}
	return s
}

// session is one generation of servers: started, registered, stopped.
type session struct {
	dir       string
	resources []Resource
	health    *Health
	log       logr.Logger
	servers   []*grpc.Server
	sockets   map[string]os.FileInfo // socket path -> the file this session listens on
	pending   []Resource             // not yet registered with the current kubelet
}

// start serves every resource on a fresh socket.
func (s *session) start() error {
	for _, r := range s.resources {
		path := filepath.Join(s.dir, r.Endpoint)
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("removing the stale socket %s: %w", path, err)
		}
		lis, err := net.Listen("unix", path)
		if err != nil {
			return fmt.Errorf("serving %s: %w", r.Name, err)
		}
		fi, err := os.Stat(path)
		if err != nil {
			_ = lis.Close()
			return fmt.Errorf("serving %s: %w", r.Name, err)
		}
		if s.sockets == nil {
			s.sockets = map[string]os.FileInfo{}
		}
		s.sockets[path] = fi
		srv := grpc.NewServer()
		pluginapi.RegisterDevicePluginServer(srv, &plugin{res: r, health: s.health})
		go func() { _ = srv.Serve(lis) }()
		s.servers = append(s.servers, srv)
	}
	s.pending = append([]Resource(nil), s.resources...)
	return nil
}

// socketsIntact reports whether every socket file is still the one this
// session listens on.
func (s *session) socketsIntact() bool {
	if len(s.sockets) != len(s.resources) {
		return false
	}
	for path, fi := range s.sockets {
		now, err := os.Stat(path)
		if err != nil || !os.SameFile(fi, now) {
			return false
		}
	}
	return true
}

// stop ends every server (and its ListAndWatch streams); closing a unix
// listener removes its socket.
func (s *session) stop() {
	for _, srv := range s.servers {
		srv.Stop()
	}
	s.servers, s.sockets = nil, nil
}

// registerPending registers the resources not registered yet, keeping the
// failed ones pending.
func (s *session) registerPending(ctx context.Context) error {
	if len(s.pending) == 0 {
		return nil
	}
	conn, err := grpc.NewClient("unix://"+filepath.Join(s.dir, KubeletSocket), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer conn.Close()
	client := pluginapi.NewRegistrationClient(conn)
	var failed []Resource
	var errs []error
	for _, r := range s.pending {
		rctx, cancel := context.WithTimeout(ctx, registerTimeout)
		_, err := client.Register(rctx, &pluginapi.RegisterRequest{
			Version:      pluginapi.Version,
			Endpoint:     r.Endpoint,
			ResourceName: r.Name,
			Options:      options(),
		})
		cancel()
		if err != nil {
			failed = append(failed, r)
			errs = append(errs, fmt.Errorf("%s: %w", r.Name, err))
			continue
		}
		s.log.Info("registered with the kubelet", "resource", r.Name, "devices", len(r.DeviceIDs), "endpoint", r.Endpoint)
	}
	s.pending = failed
	return errors.Join(errs...)
}
