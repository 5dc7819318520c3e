package accounting

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/gpuvc/gpuvc/api/contract"
	"github.com/gpuvc/gpuvc/api/teamstatus"
	gpuvcv1 "github.com/gpuvc/gpuvc/api/v1alpha1"
)

// Options configure the Accountant. Zero fields take the defaults.
type Options struct {
	// Clock drives sampling; tests pass a FakeClock. Default: the real clock.
	Clock clock.Clock
	// Interval between samples, each checkpointed. Default 1 minute: a pod's start
	// and stop are each counted to within one interval.
	Interval time.Duration
	// StatusInterval is how often a Team's status.gpuSeconds is written (each
	// write wakes the Team reconciler). Default 5 minutes.
	StatusInterval time.Duration
	// Retention is how long hourly buckets are kept. Default 7 days.
	Retention time.Duration
}

func (o Options) withDefaults() Options {
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.Interval <= 0 {
		o.Interval = time.Minute
	}
	if o.StatusInterval <= 0 {
		o.StatusInterval = 5 * time.Minute
	}
	if o.Retention <= 0 {
		o.Retention = 7 * 24 * time.Hour
	}
	return o
}

// Accountant samples the GPUs every team holds and integrates them into its
// ledger. It runs on the leader only (a manager Runnable); a new leader resumes
// from the checkpoints.
type Accountant struct {
	client client.Client // cached reads of Teams and Nodes; writes
	reader client.Reader // uncached reads of pods and checkpoints
	opts   Options

	mu      sync.Mutex
	ledgers map[string]*teamLedger
	// lastGood is when every team was last sampled without an error (Unix
	// seconds; 0 before the first), exported for the stale-accounting alert.
	lastGood atomic.Int64
}

type teamLedger struct {
	*Ledger
	uid      types.UID
	statusAt time.Time
}

// New returns an Accountant; add it to a manager with mgr.Add.
func New(c client.Client, reader client.Reader, opts Options) *Accountant {
	return &Accountant{client: c, reader: reader, opts: opts.withDefaults(), ledgers: map[string]*teamLedger{}}
}

// Start samples at once and then every Interval until ctx ends.
func (a *Accountant) Start(ctx context.Context) error {
	current.Store(a)
	for {
		if err := a.Sample(ctx); err != nil && ctx.Err() == nil {
			log.FromContext(ctx).Error(err, "GPU accounting sample failed; the next sample integrates the time since the last good one")
		}
		select {
		case <-ctx.Done():
			return nil
		case <-a.opts.Clock.After(a.opts.Interval):
		}
	}
}

// holding lists pods bound to a node: only those can hold GPUs.
var holding = client.MatchingFieldsSelector{Selector: fields.ParseSelectorOrDie("spec.nodeName!=")}

// Sample integrates every team's ledger up to now and checkpoints it.
func (a *Accountant) Sample(ctx context.Context) error {
	now := a.opts.Clock.Now()
	teams := &gpuvcv1.TeamList{}
	if err := a.client.List(ctx, teams); err != nil {
		return err
	}
	nodes, err := a.nodes(ctx)
	if err != nil {
		return err
	}
	seen := map[string]bool{}
	var errs []error
	for i := range teams.Items {
		t := &teams.Items[i]
		seen[t.Name] = true
		if err := a.sampleTeam(ctx, t, nodes, now); err != nil {
			errs = append(errs, fmt.Errorf("team %s: %w", t.Name, err))
		}
	}
	a.mu.Lock()
	for name := range a.ledgers {
		if !seen[name] {
			delete(a.ledgers, name)
		}
	}
	a.mu.Unlock()
	if len(errs) == 0 {
		a.lastGood.Store(now.Unix())
	}
	return errors.Join(errs...)
}

func (a *Accountant) sampleTeam(ctx context.Context, t *gpuvcv1.Team, nodes map[string]NodeInfo, now time.Time) error {
	ns := gpuvcv1.HostNamespace(t.Name)
	pods := &corev1.PodList{}
	if err := a.reader.List(ctx, pods, client.InNamespace(ns), holding); err != nil {
		return err
	}
	rates := TeamRates(pods.Items, nodes, t.Spec.Pool)
	if t.Spec.DRA != nil {
		// Uncached as the pods: only spec.dra teams' claims are read.
		claims := &resourcev1.ResourceClaimList{}
		if err := a.reader.List(ctx, claims, client.InNamespace(ns)); err != nil {
			return err
		}
		for k, v := range DRARates(pods.Items, claims.Items, nodes, t.Spec.Pool) {
			rates[k] += v
		}
	}

	a.mu.Lock()
	tl := a.ledgers[t.Name]
	a.mu.Unlock()
	if tl == nil || tl.uid != t.UID {
		saved, err := loadLedger(ctx, a.reader, ns)
		var corrupt *decodeError
		if errors.As(err, &corrupt) {
			// Unreadable: nothing can be recovered from it; count afresh (it is
			// overwritten) rather than never again.
			log.FromContext(ctx).Error(err, "GPU accounting checkpoint unreadable; counting starts again", "team", t.Name)
			saved, err = nil, nil
		}
		if err != nil {
			return err // not counted now: the next sample integrates from the checkpoint
		}
		tl = &teamLedger{uid: t.UID}
		if saved != nil {
			tl.Ledger = saved
			tl.Resume(now, rates)
		} else {
			tl.Ledger = NewLedger(now)
			tl.Advance(now, rates)
		}
	} else {
		a.mu.Lock()
		tl.Advance(now, rates)
		a.mu.Unlock()
	}
	a.mu.Lock()
	tl.Prune(now, a.opts.Retention)
	a.ledgers[t.Name] = tl
	a.mu.Unlock()

	if err := saveLedger(ctx, a.client, t.Name, ns, tl.Ledger); err != nil {
		return err
	}
	if now.Sub(tl.statusAt) < a.opts.StatusInterval {
		return nil
	}
	s := statusOf(tl.Ledger)
	// An idle team's counts do not change: no write, no reconcile of its Team.
	if t.Status.GPUSeconds != nil && sameCounts(t.Status.GPUSeconds, s) {
		return nil
	}
	want := t.DeepCopy()
	want.Status.GPUSeconds = s
	// status.gpuSeconds alone (teamstatus): it never races the other writers.
	if _, err := teamstatus.Accounting.Apply(ctx, a.client, t, want); client.IgnoreNotFound(err) != nil {
		return err
	}
	tl.statusAt = now
	return nil
}

// nodes reads each node's pool and GPU product.
func (a *Accountant) nodes(ctx context.Context) (map[string]NodeInfo, error) {
	list := &corev1.NodeList{}
	if err := a.client.List(ctx, list); err != nil {
		return nil, err
	}
	out := make(map[string]NodeInfo, len(list.Items))
	for _, n := range list.Items {
		out[n.Name] = NodeInfo{Pool: n.Labels[contract.LabelPool], Product: n.Labels[contract.LabelGPUProduct]}
	}
	return out, nil
}

// Totals returns a copy of every team's totals.
func (a *Accountant) Totals() map[string]Seconds {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make(map[string]Seconds, len(a.ledgers))
	for name, l := range a.ledgers {
		s := Seconds{}
		for k, v := range l.Totals {
			s[k] = v
		}
		out[name] = s
	}
	return out
}
