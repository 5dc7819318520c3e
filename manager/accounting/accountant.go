package accounting

import (
	"context"
	"encoding/json"
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
	// Namespace is where the ledgers are kept: gpuvc's own (the chart's release
	// namespace), where no tenant identity may write. Created when missing.
	// Default DefaultNamespace.
	Namespace string
	// DeletedRetention is how long the ledger of a deleted team is kept, counted
	// from when the accountant first saw the Team gone. Default 90 days.
	DeletedRetention time.Duration
}

// DefaultNamespace is where `gpuvc install` puts gpuvc (charts/installer).
const DefaultNamespace = "gpuvc-system"

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
	if o.Namespace == "" {
		o.Namespace = DefaultNamespace
	}
	if o.DeletedRetention <= 0 {
		o.DeletedRetention = 90 * 24 * time.Hour
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
	// gone are the ledgers of Teams no longer listed, until their records are
	// marked deleted: the interval since their last sample is credited from them.
	gone map[types.UID]*Ledger
	// prepared: the namespace exists and legacy ledgers are moved (prepare).
	prepared bool
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
	return &Accountant{client: c, reader: reader, opts: opts.withDefaults(), ledgers: map[string]*teamLedger{}, gone: map[types.UID]*Ledger{}}
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

// Sample integrates every team's ledger up to now and checkpoints it; the ledgers
// of Teams gone are marked deleted, and removed after DeletedRetention. Nothing is
// counted before the first prepare succeeds: a ledger started afresh would hide
// the legacy one not moved yet.
func (a *Accountant) Sample(ctx context.Context) error {
	now := a.opts.Clock.Now()
	if err := a.prepare(ctx, now); err != nil {
		return err
	}
	teams := &gpuvcv1.TeamList{}
	if err := a.client.List(ctx, teams); err != nil {
		return err
	}
	nodes, err := a.nodes(ctx)
	if err != nil {
		return err
	}
	seen := map[string]bool{}
	live := map[types.UID]bool{}
	var errs []error
	for i := range teams.Items {
		t := &teams.Items[i]
		seen[t.Name] = true
		live[t.UID] = true
		if err := a.sampleTeam(ctx, t, nodes, now); err != nil {
			errs = append(errs, fmt.Errorf("team %s: %w", t.Name, err))
		}
	}
	a.mu.Lock()
	for name, tl := range a.ledgers {
		if !seen[name] {
			a.gone[tl.uid] = tl.Ledger
			delete(a.ledgers, name)
		}
	}
	a.mu.Unlock()
	if err := a.sweep(ctx, live, now); err != nil {
		errs = append(errs, err)
	}
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
	if tl != nil && tl.uid != t.UID {
		// Deleted and created again between two samples: the old one's record is
		// marked deleted by the sweep, from this.
		a.gone[tl.uid] = tl.Ledger
	}
	if tl == nil || tl.uid != t.UID {
		saved, err := loadLedger(ctx, a.reader, a.opts.Namespace, LedgerName(t.Name, t.UID))
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
	for name, n := range nodes {
		if v, ok := n.Lost[t.Name]; ok {
			pool := n.Pool
			if pool == "" {
				pool = t.Spec.Pool
			}
			tl.CreditLost(now, name, pool, v)
		}
	}
	tl.Prune(now, a.opts.Retention)
	a.ledgers[t.Name] = tl
	a.mu.Unlock()

	if err := saveRecord(ctx, a.client, a.opts.Namespace, &Record{Team: t.Name, UID: t.UID, Ledger: tl.Ledger}); err != nil {
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
		info := NodeInfo{Pool: n.Labels[contract.LabelPool], Product: n.Labels[contract.LabelGPUProduct]}
		if v := n.Annotations[contract.AnnotationGPUSecondsLost]; v != "" {
			if err := json.Unmarshal([]byte(v), &info.Lost); err != nil {
				log.FromContext(ctx).Error(err, "unreadable GPU-seconds lost on a node; not credited", "node", n.Name, "annotation", contract.AnnotationGPUSecondsLost)
				info.Lost = nil
			}
		}
		out[n.Name] = info
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
