package queued

import (
	"context"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/gpuvc/gpuvc/api/contract"
)

// Controller posts the Queued event on waiting pods.
type Controller struct {
	client   client.Client
	recorder events.EventRecorder
	// told remembers the last reason told per Workload, so a pod gets one event
	// per new reason (a restart tells each waiting pod once more).
	mu   sync.Mutex
	told map[types.UID]string
}

// New returns the controller.
func New(c client.Client, recorder events.EventRecorder) *Controller {
	return &Controller{client: c, recorder: recorder, told: map[types.UID]string{}}
}

// SetupWithManager watches Kueue's Workloads in team namespaces, if Kueue is
// installed (checked once, at start); it reports whether it was set up.
func (c *Controller) SetupWithManager(mgr ctrl.Manager, teamNamespace func(string) bool) (bool, error) {
	if _, err := mgr.GetRESTMapper().RESTMapping(WorkloadKind.GroupKind(), WorkloadKind.Version); err != nil {
		return false, nil
	}
	wl := &unstructured.Unstructured{}
	wl.SetGroupVersionKind(WorkloadKind)
	return true, ctrl.NewControllerManagedBy(mgr).Named("queued").
		For(wl, builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool { return teamNamespace(o.GetNamespace()) }))).
		Complete(c)
}

// Reconcile tells the Workload's pod why it waits, once per reason.
func (c *Controller) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	wl := &unstructured.Unstructured{}
	wl.SetGroupVersionKind(WorkloadKind)
	if err := c.client.Get(ctx, req.NamespacedName, wl); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	// A preempted Workload also waits (QuotaReserved=False), but its pod is
	// being stopped: it is told why it stops, not that it queues.
	preempted, preemptedMsg := preemption(wl)
	reason := waiting(wl)
	if preempted != "" {
		reason = "preempted: " + preemptedMsg
	}
	podName := podOf(wl)
	c.mu.Lock()
	if reason == "" || podName == "" || c.told[wl.GetUID()] == reason {
		if reason == "" {
			delete(c.told, wl.GetUID())
		}
		c.mu.Unlock()
		return reconcile.Result{}, nil
	}
	c.mu.Unlock()
	pod := podMeta() // the manager caches pods' metadata only
	if err := c.client.Get(ctx, types.NamespacedName{Namespace: req.Namespace, Name: podName}, pod); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	pod.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Pod")) // the event's reference
	if preempted == "" && pod.DeletionTimestamp != nil {
		return reconcile.Result{}, nil
	}
	team, cohort, standing := c.standing(ctx, wl, pod)
	if preempted != "" {
		c.recorder.Eventf(pod, wl, eventType, ReasonPreempted, "Preempt", "%s", preemptedMessage(team, cohort, preempted, preemptedMsg))
	} else {
		c.recorder.Eventf(pod, wl, eventType, ReasonQueued, "Queue", "%s", message(team, cohort, standing, reason))
	}
	c.mu.Lock()
	c.told[wl.GetUID()] = reason
	c.mu.Unlock()
	return reconcile.Result{}, nil
}

// standing reads the team's ClusterQueue (through the Workload's LocalQueue) for
// the event: team, cohort and GPU standing; blanks where it cannot.
func (c *Controller) standing(ctx context.Context, wl *unstructured.Unstructured, pod *metav1.PartialObjectMetadata) (team, cohort, standing string) {
	team = pod.Namespace
	if ns := (&corev1.Namespace{}); c.client.Get(ctx, types.NamespacedName{Name: pod.Namespace}, ns) == nil {
		if t := ns.Labels[contract.LabelTeam]; t != "" {
			team = t
		}
	}
	lqName, _, _ := unstructured.NestedString(wl.Object, "spec", "queueName")
	lq := &unstructured.Unstructured{}
	lq.SetGroupVersionKind(localQueueKind)
	if err := c.client.Get(ctx, types.NamespacedName{Namespace: wl.GetNamespace(), Name: lqName}, lq); err != nil {
		return team, "", ""
	}
	cqName, _, _ := unstructured.NestedString(lq.Object, "spec", "clusterQueue")
	cq := &unstructured.Unstructured{}
	cq.SetGroupVersionKind(clusterQueueKind)
	if err := c.client.Get(ctx, types.NamespacedName{Name: cqName}, cq); err != nil {
		return team, "", ""
	}
	cohort, _, _ = unstructured.NestedString(cq.Object, "spec", "cohortName")
	if mode, _, _ := unstructured.NestedString(cq.Object, "spec", "admissionScope", "admissionMode"); mode == usageBasedAdmission {
		cohort = "" // a usage-history pool's ClusterQueue is alone in its cohort
	}
	wls := &unstructured.UnstructuredList{}
	wls.SetGroupVersionKind(WorkloadKind.GroupVersion().WithKind("WorkloadList"))
	// Read only: the cache's own objects, not a copy of each (every Workload of
	// the namespace, for every Workload's event: a restart at 3,800 Workloads
	// spent a third of its CPU copying them).
	if err := c.client.List(ctx, wls, client.InNamespace(wl.GetNamespace()), client.UnsafeDisableDeepCopy); err != nil {
		return team, cohort, ""
	}
	return team, cohort, gpuStanding(cq, wls.Items)
}
