package team

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/gpuvc/gpuvc/api/contract"
	"github.com/gpuvc/gpuvc/api/teamstatus"
	gpuvcv1 "github.com/gpuvc/gpuvc/api/v1alpha1"
	"github.com/gpuvc/gpuvc/manager/teamevents"
	"github.com/gpuvc/gpuvc/vclusters"
)

// VClusters installs, checks and removes a team's vCluster release.
// *vclusters.Client implements it; tests may substitute it where Helm is not the point.
type VClusters interface {
	Apply(ctx context.Context, spec vclusters.Spec) (vclusters.ApplyResult, error)
	Ready(ctx context.Context, spec vclusters.Spec) (vclusters.Readiness, error)
	Kubeconfig(ctx context.Context, spec vclusters.Spec) ([]byte, error)
	Uninstall(ctx context.Context, spec vclusters.Spec) error
}

// Reconciler provisions Teams.
type Reconciler struct {
	client    ctrl.Client
	vclusters VClusters
	recorder  events.EventRecorder
	opts      Options
	clock     clock.PassiveClock
	// kueueAtStart: Kueue's kinds were served when the manager started. Without
	// them there is no team queue to remove, and asking would cost a full API
	// discovery per reconcile of every team.
	kueueAtStart bool
	// teamEvents tells a team in its own virtual cluster what changed for it
	// (nil: the host Team only).
	teamEvents *teamevents.Recorder

	mu        sync.Mutex
	quotaTold map[string]string // per team, the last quota change told
}

// Options shape every team's vCluster the same way.
type Options struct {
	// Chart is where vCluster's chart comes from (a Team's spec.vcluster.chartVersion
	// overrides the version).
	Chart vclusters.ChartSource
	// ServerURL returns the https URL at which a team reaches its virtual cluster;
	// svc is the team's control-plane Service, the zero Service when ServerURL does
	// not use it. Nil: the Service's in-cluster name, https://<release>.<namespace>.svc.
	ServerURL func(t *gpuvcv1.Team, svc ServiceAddress) string
	// ServerURLUsesService says that ServerURL needs the Service's ClusterIP or node
	// port, which exist only once the release is installed. The release is then
	// installed with the in-cluster name (vCluster puts its ClusterIP, and node IPs
	// for a NodePort Service, in its serving certificate itself) and the team's
	// kubeconfig is pointed at ServerURL once the Service has them.
	ServerURLUsesService bool
	// PlatformValues are vCluster chart values every team's release gets (an image
	// registry mirror, the distro image, resources...). A Team's own
	// spec.vcluster.values are merged over them; gpuvc's fence paths are removed
	// from both.
	PlatformValues map[string]any
	// ControlPlanePool pins vCluster control planes to a node pool. Empty: anywhere
	// untainted.
	ControlPlanePool string
	// SystemPool is where the fences let vCluster control-plane pods run (the
	// webhook pins them there; the CEL policy checks it). Empty: "system".
	SystemPool string
	// Persistence of each vCluster's datastore.
	Persistence vclusters.Persistence
	// SyncRealNodes shows teams their pool's real nodes; it grants every team's
	// control plane cluster-wide read of pods (see vclusters.Spec.SyncRealNodes).
	SyncRealNodes bool
	// HostStorageClasses shows teams the host's StorageClasses (see
	// vclusters.Spec.HostStorageClasses).
	HostStorageClasses bool
	// MetricsProxy says whether a team's vCluster proxies the host's Metrics
	// API (kubectl top through the team's kubeconfig); nil: never. See
	// MetricsProxy for the modes.
	MetricsProxy func(context.Context) bool
	// WaitInterval is how often a team whose vCluster is still starting is checked.
	WaitInterval time.Duration
	// UsageHistoryPools are the pools whose queueing teams share their GPUs by
	// usage history (Kueue's AdmissionFairSharing): one ClusterQueue per pool,
	// ordered by each team's decayed past use over its spec.queueing.weight,
	// instead of a ClusterQueue per team (docs/queueing.md, "Fairness with
	// memory"). Kueue's own configuration must set admissionFairSharing.
	UsageHistoryPools []string
	// Workers is how many Teams are reconciled at once (one Team is never
	// reconciled by two at a time). Default DefaultWorkers.
	Workers int
}

// DefaultWorkers is the number of Teams reconciled at once unless Options.Workers
// says otherwise. Workers overlap a reconcile's waits on the API server (a Helm
// install is mostly round trips); where the CPU is the limit they cost nothing
// measurable (docs/benchmarks.md, "Team workers").
const DefaultWorkers = 4

// Option configures a Reconciler.
type Option func(*Reconciler)

// WithClock sets the clock used for condition timestamps.
func WithClock(c clock.PassiveClock) Option { return func(r *Reconciler) { r.clock = c } }

// WithTeamEvents tells each team, in its own virtual cluster, what changed for
// it (a quota change), through rec (shared with the idle policy, which flushes
// what waited for a sleeping control plane on wake).
func WithTeamEvents(rec *teamevents.Recorder) Option {
	return func(r *Reconciler) { r.teamEvents = rec }
}

// NewReconciler returns a Team reconciler.
func NewReconciler(c ctrl.Client, vc VClusters, recorder events.EventRecorder, opts Options, o ...Option) *Reconciler {
	if opts.WaitInterval == 0 {
		opts.WaitInterval = 5 * time.Second
	}
	if opts.Workers <= 0 {
		opts.Workers = DefaultWorkers
	}
	r := &Reconciler{client: c, vclusters: vc, recorder: recorder, opts: opts, clock: clock.RealClock{}, quotaTold: map[string]string{}}
	for _, f := range o {
		f(r)
	}
	return r
}

// Reconcile brings one Team's host resources, vCluster and kubeconfig to its spec and
// reports what it found in the Team's status.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	t := &gpuvcv1.Team{}
	if err := r.client.Get(ctx, req.NamespacedName, t); err != nil {
		return reconcile.Result{}, ctrl.IgnoreNotFound(err)
	}
	ctx = log.IntoContext(ctx, log.FromContext(ctx).WithValues("team", t.Name))
	if !t.DeletionTimestamp.IsZero() {
		return r.delete(ctx, t)
	}
	if !controllerutil.ContainsFinalizer(t, gpuvcv1.Finalizer) {
		orig := t.DeepCopy()
		controllerutil.AddFinalizer(t, gpuvcv1.Finalizer)
		if err := r.client.Patch(ctx, t, ctrl.MergeFrom(orig)); err != nil {
			return reconcile.Result{}, err
		}
	}

	orig := t.DeepCopy()
	w := teamstatus.Reconciler.Writer(r.client, t)
	result, err := r.provision(ctx, w, t)
	t.Status.ObservedGeneration = t.Generation
	r.setReady(t)
	if _, perr := w.Write(ctx, t); perr != nil {
		return result, errors.Join(err, perr)
	}
	if becameReady(orig, t) {
		r.recorder.Eventf(t, nil, corev1.EventTypeNormal, "Ready", "Provision",
			"team %s is ready: namespace %s, kubeconfig in secret %s", t.Name, t.Status.Namespace, t.Status.KubeconfigSecret)
	}
	if apimeta.IsStatusConditionTrue(t.Status.Conditions, gpuvcv1.ConditionReady) {
		r.teamEvents.Flush(ctx, t) // what waited for the virtual cluster to serve (no request when nothing did)
	}
	return result, err
}

// provision runs every step, recording conditions on t as it goes.
// A Team being created says which step runs (see progress) before each slow one.
func (r *Reconciler) provision(ctx context.Context, w *teamstatus.Writer, t *gpuvcv1.Team) (reconcile.Result, error) {
	if errs := t.Validate(); len(errs) > 0 {
		msg := errs.ToAggregate().Error()
		r.condition(t, gpuvcv1.ConditionHostResourcesReady, false, "InvalidSpec", msg)
		r.recorder.Eventf(t, nil, corev1.EventTypeWarning, "InvalidSpec", "Validate", "%s", msg)
		return reconcile.Result{}, nil // nothing to retry until the spec changes
	}
	r.progress(ctx, w, t, phaseHost)
	for _, s := range r.hostSteps() {
		if err := s.run(ctx, t); err != nil {
			msg := fmt.Sprintf("%s: %v", s.name, err)
			r.condition(t, gpuvcv1.ConditionHostResourcesReady, false, s.name+"Failed", msg)
			r.recorder.Eventf(t, nil, corev1.EventTypeWarning, s.name+"Failed", "Provision", "%s", msg)
			return reconcile.Result{}, err
		}
		if s.then != phaseNone {
			r.progress(ctx, w, t, s.then)
		}
	}
	t.Status.Namespace = gpuvcv1.HostNamespace(t.Name)
	r.condition(t, gpuvcv1.ConditionHostResourcesReady, true, "Provisioned",
		"namespace, quota, limits, network policies and RBAC match the spec")
	r.recordUsage(ctx, t)
	r.progress(ctx, w, t, phaseChart)

	spec := r.vclusterSpec(t)
	spec.MetricsProxy = r.opts.MetricsProxy != nil && r.opts.MetricsProxy(ctx)
	applied, err := r.vclusters.Apply(ctx, spec)
	if err != nil {
		r.condition(t, gpuvcv1.ConditionVClusterReady, false, "ReleaseFailed", err.Error())
		r.recorder.Eventf(t, nil, corev1.EventTypeWarning, "ReleaseFailed", "Provision", "vCluster release %s: %v", spec.Name, err)
		if errors.Is(err, vclusters.ErrInvalidSpec) {
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, err
	}
	if applied.Change != vclusters.Unchanged {
		r.recorder.Eventf(t, nil, corev1.EventTypeNormal, "Release"+string(applied.Change), "Provision",
			"vCluster release %s %s (revision %d)", spec.Name, lower(string(applied.Change)), applied.Revision)
	}
	ready, err := r.vclusters.Ready(ctx, spec)
	if err != nil {
		return reconcile.Result{}, err
	}
	r.condition(t, gpuvcv1.ConditionVClusterReady, ready.Ready, ready.Reason, ready.Message)
	if !ready.Ready {
		return reconcile.Result{RequeueAfter: r.opts.WaitInterval}, nil
	}
	return r.ensureKubeconfig(ctx, t, spec)
}

// ensureKubeconfig copies vCluster's exported kubeconfig, pointed at the
// team-reachable server, into the Secret members may read.
func (r *Reconciler) ensureKubeconfig(ctx context.Context, t *gpuvcv1.Team, spec vclusters.Spec) (reconcile.Result, error) {
	if r.opts.ServerURLUsesService {
		svc, err := r.serviceAddress(ctx, spec)
		if err != nil {
			r.condition(t, gpuvcv1.ConditionKubeconfigReady, false, "KubeconfigPending", err.Error())
			return reconcile.Result{RequeueAfter: r.opts.WaitInterval}, nil
		}
		spec.KubeconfigServer = r.opts.ServerURL(t, svc)
	}
	kubeconfig, err := r.vclusters.Kubeconfig(ctx, spec)
	if err != nil {
		r.condition(t, gpuvcv1.ConditionKubeconfigReady, false, "KubeconfigPending", err.Error())
		return reconcile.Result{RequeueAfter: r.opts.WaitInterval}, nil
	}
	if err := r.apply(ctx, desiredKubeconfigSecret(t, kubeconfig).WithOwnerReferences(ownerRef(t))); err != nil {
		r.condition(t, gpuvcv1.ConditionKubeconfigReady, false, "SecretFailed", err.Error())
		return reconcile.Result{}, err
	}
	t.Status.KubeconfigSecret = contract.KubeconfigSecretName
	r.condition(t, gpuvcv1.ConditionKubeconfigReady, true, "Exported",
		fmt.Sprintf("kubeconfig for %s in secret %s/%s", spec.KubeconfigServer, t.Status.Namespace, contract.KubeconfigSecretName))
	return reconcile.Result{}, nil
}

// recordUsage copies the quota's usage into the status; a missing quota is not an error.
func (r *Reconciler) recordUsage(ctx context.Context, t *gpuvcv1.Team) {
	q := &corev1.ResourceQuota{}
	key := types.NamespacedName{Namespace: gpuvcv1.HostNamespace(t.Name), Name: QuotaName}
	if err := r.client.Get(ctx, key, q); err != nil {
		if !apierrors.IsNotFound(err) {
			log.FromContext(ctx).V(1).Info("reading quota usage", "err", err)
		}
		return
	}
	t.Status.GPUUsage = gpuUsage(q)
	r.recordQueue(ctx, t)
}

func (r *Reconciler) condition(t *gpuvcv1.Team, typ string, ok bool, reason, msg string) {
	status := metav1.ConditionFalse
	if ok {
		status = metav1.ConditionTrue
	}
	apimeta.SetStatusCondition(&t.Status.Conditions, metav1.Condition{
		Type: typ, Status: status, Reason: reason, Message: msg,
		ObservedGeneration: t.Generation, LastTransitionTime: metav1.NewTime(r.clock.Now()),
	})
}

// setReady summarises the other conditions: Ready is true only when all are.
func (r *Reconciler) setReady(t *gpuvcv1.Team) {
	for _, typ := range []string{gpuvcv1.ConditionHostResourcesReady, gpuvcv1.ConditionVClusterReady, gpuvcv1.ConditionKubeconfigReady} {
		c := apimeta.FindStatusCondition(t.Status.Conditions, typ)
		if c == nil {
			r.condition(t, gpuvcv1.ConditionReady, false, gpuvcv1.ReasonProvisioning, typ+" not yet reported")
			return
		}
		if c.Status != metav1.ConditionTrue || c.ObservedGeneration != t.Generation {
			r.condition(t, gpuvcv1.ConditionReady, false, c.Reason, typ+": "+c.Message)
			return
		}
	}
	r.condition(t, gpuvcv1.ConditionReady, true, "Ready", "the team's virtual cluster is ready and its kubeconfig exported")
}

func becameReady(before, after *gpuvcv1.Team) bool {
	return !apimeta.IsStatusConditionTrue(before.Status.Conditions, gpuvcv1.ConditionReady) &&
		apimeta.IsStatusConditionTrue(after.Status.Conditions, gpuvcv1.ConditionReady)
}

func lower(s string) string {
	if s == "" {
		return s
	}
	return string(s[0]+'a'-'A') + s[1:]
}
