package queued

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/gpuvc/gpuvc/api/contract"
)

// ReasonNotQueued names the event a pod gets when gpuvc sent it to Kueue but
// Kueue has not taken it (no Workload) after the grace period.
const ReasonNotQueued = "NotQueued"

// DefaultNotQueuedAfter is how long a pod gpuvc gated for Kueue may go without
// a Workload before it is told so: Kueue makes one within a second or two, even
// under load; a minute leaves room for a Kueue restart.
const DefaultNotQueuedAfter = time.Minute

// NotQueued tells a pod that gpuvc gated for Kueue (it names a queue and holds
// Kueue's admission gate) when Kueue has made no Workload for it within the
// grace period: nothing else would lift its gate, and without a word the team
// would see a pod Pending forever. Kueue is down, its pod integration is off, or
// its managedJobsNamespaceSelector leaves the team's namespace out.
type NotQueued struct {
	client client.Client
	// reader reads a pod whole when the controller is about to tell it: the
	// client's cache holds pods' metadata only.
	reader   client.Reader
	recorder events.EventRecorder
	grace    time.Duration
	clock    clock.PassiveClock
	// kueue: Kueue's Workload API was served when the controller started.
	kueue bool
	// told holds the pods told that still wait, by UID (which a pod of the same
	// name created again does not share), with their team: one event per pod,
	// and the metric.
	mu   sync.Mutex
	told map[types.NamespacedName]toldPod
}

type toldPod struct {
	uid  types.UID
	team string
}

// NotQueuedOption configures NotQueued.
type NotQueuedOption func(*NotQueued)

// WithGrace sets how long a gated pod may go without a Workload; 0 keeps
// DefaultNotQueuedAfter.
func WithGrace(d time.Duration) NotQueuedOption {
	return func(n *NotQueued) {
		if d > 0 {
			n.grace = d
		}
	}
}

// WithReader sets where a pod about to be told is read whole from (its
// scheduling gates): the API server (mgr.GetAPIReader()) where the cache holds
// pods' metadata only. Default: the client.
func WithReader(r client.Reader) NotQueuedOption {
	return func(n *NotQueued) { n.reader = r }
}

// WithClock sets the clock the pod's age is read with.
func WithClock(c clock.PassiveClock) NotQueuedOption {
	return func(n *NotQueued) { n.clock = c }
}

// NewNotQueued returns the controller.
func NewNotQueued(c client.Client, recorder events.EventRecorder, opts ...NotQueuedOption) *NotQueued {
	n := &NotQueued{client: c, reader: c, recorder: recorder, grace: DefaultNotQueuedAfter, clock: clock.RealClock{}, told: map[types.NamespacedName]toldPod{}}
	for _, o := range opts {
		o(n)
	}
	return n
}

// SetupWithManager watches the pods of team namespaces that wait for Kueue,
// metadata only: a pod is read whole only when it is about to be told.
// It runs whether or not Kueue is installed: without Kueue's API a pod sent to
// Kueue waits all the same, and is told that Kueue is not installed.
func (n *NotQueued) SetupWithManager(mgr ctrl.Manager, teamNamespace func(string) bool) error {
	_, err := mgr.GetRESTMapper().RESTMapping(WorkloadKind.GroupKind(), WorkloadKind.Version)
	n.kueue = err == nil
	return ctrl.NewControllerManagedBy(mgr).Named("notqueued").
		For(&corev1.Pod{}, builder.OnlyMetadata, builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool {
			return teamNamespace(o.GetNamespace()) && o.GetLabels()[contract.LabelKueueQueueName] != ""
		}))).
		Complete(n)
}

// podMeta is an empty metadata-only pod to read into.
func podMeta() *metav1.PartialObjectMetadata {
	m := &metav1.PartialObjectMetadata{}
	m.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Pod"))
	return m
}

// Reconcile tells a pod gated for Kueue past the grace period without a
// Workload why it waits; it looks again when the grace period ends. Its
// metadata and the Workloads (both cached) decide almost every case: the pod
// is read whole (its gates) only when it is, or is about to be, told.
func (n *NotQueued) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	meta := podMeta()
	if err := n.client.Get(ctx, req.NamespacedName, meta); err != nil {
		n.forget(req.NamespacedName)
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if meta.DeletionTimestamp != nil || meta.Labels[contract.LabelKueueQueueName] == "" {
		n.forget(req.NamespacedName)
		return reconcile.Result{}, nil
	}
	told := n.wasTold(req.NamespacedName, meta.UID)
	if !told {
		if left := n.grace - n.clock.Since(meta.CreationTimestamp.Time); left > 0 {
			return reconcile.Result{RequeueAfter: left}, nil
		}
	}
	// Kueue took it (or, told, may take it yet: restarted, its configuration
	// fixed): then it does not count as not queued.
	if has, err := n.hasWorkload(ctx, meta.Namespace, meta.UID); err != nil || has {
		if has {
			n.forget(req.NamespacedName)
		}
		return reconcile.Result{}, err
	}
	pod := &corev1.Pod{}
	if err := n.reader.Get(ctx, req.NamespacedName, pod); err != nil {
		n.forget(req.NamespacedName)
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if !waitsForKueue(pod) {
		n.forget(req.NamespacedName)
		return reconcile.Result{}, nil
	}
	if told {
		return reconcile.Result{}, nil
	}
	n.recorder.Eventf(pod, nil, corev1.EventTypeWarning, ReasonNotQueued, "Queue", "%s", notQueuedMessage(pod.Namespace, n.grace, n.kueue))
	entry := toldPod{uid: pod.UID, team: n.teamOf(ctx, pod.Namespace)}
	n.mu.Lock()
	n.told[req.NamespacedName] = entry
	n.mu.Unlock()
	return reconcile.Result{}, nil
}

// waitsForKueue: the pod names a Kueue queue, still holds Kueue's admission
// gate and is not being deleted.
func waitsForKueue(pod *corev1.Pod) bool {
	if pod.DeletionTimestamp != nil || pod.Labels[contract.LabelKueueQueueName] == "" {
		return false
	}
	return slices.ContainsFunc(pod.Spec.SchedulingGates, func(g corev1.PodSchedulingGate) bool {
		return g.Name == contract.KueueAdmissionGate
	})
}

// hasWorkload: a Workload of the pod's namespace is owned by the pod (false
// without Kueue's API).
func (n *NotQueued) hasWorkload(ctx context.Context, namespace string, uid types.UID) (bool, error) {
	if !n.kueue {
		return false, nil
	}
	wls := &unstructured.UnstructuredList{}
	wls.SetGroupVersionKind(WorkloadKind.GroupVersion().WithKind("WorkloadList"))
	// Read only: the cache's own objects, not a copy of each (see Controller.standing).
	if err := n.client.List(ctx, wls, client.InNamespace(namespace), client.UnsafeDisableDeepCopy); err != nil {
		return false, err
	}
	for _, wl := range wls.Items {
		for _, o := range wl.GetOwnerReferences() {
			if o.UID == uid {
				return true, nil
			}
		}
	}
	return false, nil
}

func (n *NotQueued) wasTold(key types.NamespacedName, uid types.UID) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.told[key].uid == uid
}

// teamOf names the team of a host namespace (its label), else the namespace.
func (n *NotQueued) teamOf(ctx context.Context, namespace string) string {
	ns := &corev1.Namespace{}
	if n.client.Get(ctx, types.NamespacedName{Name: namespace}, ns) == nil && ns.Labels[contract.LabelTeam] != "" {
		return ns.Labels[contract.LabelTeam]
	}
	return namespace
}

func (n *NotQueued) forget(key types.NamespacedName) {
	n.mu.Lock()
	delete(n.told, key)
	n.mu.Unlock()
}

// notQueuedMessage is the event: what is wrong, what it means for the pod,
// what to check and who can.
func notQueuedMessage(namespace string, grace time.Duration, kueue bool) string {
	check := fmt.Sprintf("is Kueue running, and does its pod integration take namespace %s (Kueue's configuration: integrations.frameworks lists \"pod\", managedJobsNamespaceSelector selects %s)?", namespace, namespace)
	if !kueue {
		check = "Kueue's API (kueue.x-k8s.io Workloads) was not installed when gpuvc's manager started: install Kueue, then restart the manager."
	}
	return fmt.Sprintf("not queued: no Kueue Workload for this pod after %s, so nothing admits it and it stays Pending (scheduling gate %s); ask the platform team: %s Once Kueue takes the namespace, delete the pod and create it again.",
		grace, contract.KueueAdmissionGate, check)
}
