package teamclaims

import (
	"context"
	"errors"
	"net"
	"slices"
	"sync"
	"time"

	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	gpuvcv1 "github.com/gpuvc/gpuvc/api/v1alpha1"
	"github.com/gpuvc/gpuvc/manager/teamevents"
)

// Options configure a Runner. Zero fields take the defaults.
type Options struct {
	// Dial connects to a team's control-plane pod. Default: a net.Dialer with a
	// 5s timeout.
	Dial func(ctx context.Context, network, address string) (net.Conn, error)
	// Teams is how often the list of spec.dra teams is read. Default 5s.
	Teams time.Duration
	// Resync is the longest time between two passes of a team whose objects
	// did not change (a pass runs at every change of a virtual claim or
	// template, or of a host copy). Default 30s.
	Resync time.Duration
	// Retry is the wait after a team's control plane could not be reached.
	// Default 5s.
	Retry time.Duration
}

// Runner runs the sync of every spec.dra team on the manager's leader.
type Runner struct {
	teams  client.Reader // the manager's cache: Teams
	reader client.Reader // uncached: the team's kubeconfig Secret, its control plane
	host   kubernetes.Interface
	opts   Options

	mu      sync.Mutex
	running map[string]*running
	// swept is set once the copies of teams without spec.dra were removed
	// after a start (the team may have dropped it while no manager ran).
	swept bool
}

type running struct {
	classes []string
	stop    context.CancelFunc
	done    chan struct{}
}

// New returns a Runner reading Teams through teams, the teams' kubeconfigs
// and control planes through reader, and writing the host through host.
func New(teams, reader client.Reader, host kubernetes.Interface, opts Options) *Runner {
	if opts.Dial == nil {
		opts.Dial = (&net.Dialer{Timeout: 5 * time.Second}).DialContext
	}
	if opts.Teams <= 0 {
		opts.Teams = 5 * time.Second
	}
	if opts.Resync <= 0 {
		opts.Resync = 30 * time.Second
	}
	if opts.Retry <= 0 {
		opts.Retry = 5 * time.Second
	}
	return &Runner{teams: teams, reader: reader, host: host, opts: opts, running: map[string]*running{}}
}

// Start runs until ctx ends (a manager.Runnable; it needs the leader).
func (r *Runner) Start(ctx context.Context) error {
	defer r.stopAll()
	t := time.NewTicker(r.opts.Teams)
	defer t.Stop()
	for {
		if err := r.refresh(ctx); err != nil {
			log.FromContext(ctx).Error(err, "listing the teams whose claims gpuvc syncs")
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// refresh starts the sync of each spec.dra team, restarts it when its classes
// changed, and stops it for a team gone or without spec.dra (whose copies it
// then removes: no pod of such a team may use them).
func (r *Runner) refresh(ctx context.Context) error {
	var teams gpuvcv1.TeamList
	if err := r.teams.List(ctx, &teams); err != nil {
		return err
	}
	want := map[string]*gpuvcv1.Team{}
	for i := range teams.Items {
		t := &teams.Items[i]
		if t.DeletionTimestamp == nil && t.Spec.DRA != nil {
			want[t.Name] = t
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.swept {
		for _, t := range teams.Items {
			if want[t.Name] == nil && t.DeletionTimestamp == nil {
				r.removeCopies(ctx, gpuvcv1.HostNamespace(t.Name))
			}
		}
		r.swept = true
	}
	for name, run := range r.running {
		t := want[name]
		if t != nil && slices.Equal(run.classes, t.Spec.AllowedDeviceClasses()) {
			continue
		}
		run.stop()
		<-run.done
		delete(r.running, name)
		if t == nil && teamExists(&teams, name) {
			r.removeCopies(ctx, gpuvcv1.HostNamespace(name))
		}
	}
	for name, t := range want {
		if r.running[name] != nil {
			continue
		}
		runCtx, stop := context.WithCancel(ctx)
		run := &running{classes: t.Spec.AllowedDeviceClasses(), stop: stop, done: make(chan struct{})}
		r.running[name] = run
		go func(t *gpuvcv1.Team) {
			defer close(run.done)
			r.runTeam(log.IntoContext(runCtx, log.FromContext(ctx).WithValues("team", t.Name)), t, run.classes)
		}(t.DeepCopy())
	}
	return nil
}

func teamExists(teams *gpuvcv1.TeamList, name string) bool {
	return slices.ContainsFunc(teams.Items, func(t gpuvcv1.Team) bool { return t.Name == name && t.DeletionTimestamp == nil })
}

// removeCopies deletes gpuvc's copies in a team namespace whose team no longer
// uses DRA (a deleted team's namespace goes with everything in it).
func (r *Runner) removeCopies(ctx context.Context, namespace string) {
	logger := log.FromContext(ctx).WithValues("namespace", namespace)
	claims := r.host.ResourceV1().ResourceClaims(namespace)
	if err := deleteEach(ctx, claims.List, claims.Delete, func(l *resourcev1.ResourceClaimList) []resourcev1.ResourceClaim { return l.Items }); err != nil {
		logger.Error(err, "removing the claim copies of a team without spec.dra")
	}
	templates := r.host.ResourceV1().ResourceClaimTemplates(namespace)
	if err := deleteEach(ctx, templates.List, templates.Delete, func(l *resourcev1.ResourceClaimTemplateList) []resourcev1.ResourceClaimTemplate { return l.Items }); err != nil {
		logger.Error(err, "removing the claim template copies of a team without spec.dra")
	}
}

// deleteEach deletes gpuvc's copies one by one: the manager's role grants
// delete, not deletecollection.
func deleteEach[L any, T any, PT interface {
	*T
	metav1.Object
}](ctx context.Context, list func(context.Context, metav1.ListOptions) (L, error), del func(context.Context, string, metav1.DeleteOptions) error, items func(L) []T) error {
	l, err := list(ctx, copySelector)
	if err != nil {
		return err
	}
	var errs []error
	for _, it := range items(l) {
		o := PT(&it)
		if err := del(ctx, o.GetName(), deleteOptions(o.GetUID())); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (r *Runner) stopAll() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for name, run := range r.running {
		run.stop()
		<-run.done
		delete(r.running, name)
	}
}

// runTeam syncs team t until ctx ends: connected to a ready control-plane pod,
// a pass at every change and at least every Resync; reconnected when a watch
// ends (the pod went, the watch timed out).
func (r *Runner) runTeam(ctx context.Context, t *gpuvcv1.Team, classes []string) {
	ns, release := gpuvcv1.HostNamespace(t.Name), gpuvcv1.ReleaseName(t)
	s := &Team{Host: r.host, Namespace: ns, Release: release, Classes: classes}
	for ctx.Err() == nil {
		cfg, err := teamevents.TeamConfig(ctx, r.reader, r.opts.Dial, ns, release)
		switch {
		case err != nil:
			log.FromContext(ctx).V(1).Info("the team's virtual cluster cannot be reached; its claims wait", "error", err.Error())
		case cfg == nil:
			// asleep or starting
		default:
			cfg.UserAgent = "gpuvc-manager/claim-sync"
			if s.Virtual, err = kubernetes.NewForConfig(cfg); err == nil {
				err = r.watchAndSync(ctx, s)
			}
			if err != nil && ctx.Err() == nil {
				log.FromContext(ctx).Error(err, "syncing the team's claims; reconnecting")
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(r.opts.Retry):
		}
	}
}

// watchTimeout ends every watch after a while: the next one finds the
// control-plane pod again.
const watchTimeout = int64(5 * 60)

// watchAndSync passes once, then at every change seen by its watches (the
// team's claims and templates, the host claims of its namespace: their status)
// and every Resync; it returns when a watch ends.
func (r *Runner) watchAndSync(ctx context.Context, s *Team) error {
	opts := metav1.ListOptions{TimeoutSeconds: ptr(watchTimeout), AllowWatchBookmarks: false}
	starts := []func() (watch.Interface, error){
		func() (watch.Interface, error) {
			return s.Virtual.ResourceV1().ResourceClaims(metav1.NamespaceAll).Watch(ctx, opts)
		},
		func() (watch.Interface, error) {
			return s.Virtual.ResourceV1().ResourceClaimTemplates(metav1.NamespaceAll).Watch(ctx, opts)
		},
		func() (watch.Interface, error) {
			return r.host.ResourceV1().ResourceClaims(s.Namespace).Watch(ctx, opts)
		},
	}
	changed := make(chan struct{}, 1)
	ended := make(chan struct{}, len(starts))
	for _, start := range starts {
		w, err := start()
		if err != nil {
			return err
		}
		defer w.Stop()
		go func() {
			for range w.ResultChan() {
				select {
				case changed <- struct{}{}:
				default:
				}
			}
			ended <- struct{}{}
		}()
	}
	resync := time.NewTimer(0)
	defer resync.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-ended:
			return nil
		case <-changed:
		case <-resync.C:
		}
		if err := s.Sync(ctx); err != nil && ctx.Err() == nil {
			log.FromContext(ctx).Error(err, "syncing the team's claims")
			if errors.Is(err, context.DeadlineExceeded) {
				return err
			}
		}
		resync.Reset(r.opts.Resync)
	}
}

func ptr[T any](v T) *T { return &v }
