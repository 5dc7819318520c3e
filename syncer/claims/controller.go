package claims

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

// ConditionType is the claim condition this controller owns: True while the
// Pending claim's latest telling event says why it does not bind; Reason and
// Message are that event's, the message prefixed with where it was seen.
const ConditionType corev1.PersistentVolumeClaimConditionType = "gpuvc.dev/BindingError"

// claimKind is the involved object kind of the events read.
const claimKind = "PersistentVolumeClaim"

// reasonFailedBinding is the PersistentVolume controller's reason for a claim
// no volume matches and no class provisions ("no persistent volumes available
// for this claim and no storage class is set"): a Normal event, yet the claim
// waits forever.
const reasonFailedBinding = "FailedBinding"

// telling reports whether event says why a claim does not bind: a Warning
// (ProvisioningFailed, ...) or FailedBinding. Other Normal events
// (WaitForFirstConsumer, ExternalProvisioning, Provisioning) are progress.
func telling(e *corev1.Event) bool {
	return e.Type == corev1.EventTypeWarning || e.Reason == reasonFailedBinding
}

// Controller writes ConditionType on team claims.
type Controller struct {
	client client.Client
	// events holds events on claims only (a cache of its own, so the
	// manager's cache never holds the cluster's other events).
	events client.Reader
}

// New returns the controller; events lists events on claims (nil:
// SetupWithManager makes its own cache).
func New(c client.Client, events client.Reader) *Controller {
	return &Controller{client: c, events: events}
}

// SetupWithManager watches claims in team namespaces and the events on them,
// the latter through a cache of their own that the manager starts.
func (c *Controller) SetupWithManager(mgr ctrl.Manager, teamNamespace func(string) bool) error {
	events, err := cache.New(mgr.GetConfig(), cache.Options{
		Scheme: mgr.GetScheme(),
		Mapper: mgr.GetRESTMapper(),
		ByObject: map[client.Object]cache.ByObject{&corev1.Event{}: {
			Field: fields.SelectorFromSet(fields.Set{"involvedObject.kind": claimKind}),
		}},
	})
	if err != nil {
		return err
	}
	if err := mgr.Add(events); err != nil {
		return err
	}
	c.events = events
	inTeam := predicate.NewPredicateFuncs(func(o client.Object) bool { return teamNamespace(o.GetNamespace()) })
	return ctrl.NewControllerManagedBy(mgr).Named("claims").
		For(&corev1.PersistentVolumeClaim{}, builder.WithPredicates(inTeam)).
		WatchesRawSource(source.Kind(events, &corev1.Event{}, handler.TypedEnqueueRequestsFromMapFunc(
			func(_ context.Context, e *corev1.Event) []reconcile.Request {
				if !teamNamespace(e.Namespace) || e.InvolvedObject.Kind != claimKind || !telling(e) {
					return nil
				}
				return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: e.Namespace, Name: e.InvolvedObject.Name}}}
			}))).
		Complete(c)
}

// Reconcile sets or clears the claim's condition.
func (c *Controller) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	claim := &corev1.PersistentVolumeClaim{}
	if err := c.client.Get(ctx, req.NamespacedName, claim); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	var want *corev1.PersistentVolumeClaimCondition
	if claim.Status.Phase == corev1.ClaimPending && claim.DeletionTimestamp == nil {
		list := &corev1.EventList{}
		if err := c.events.List(ctx, list, client.InNamespace(claim.Namespace)); err != nil {
			return reconcile.Result{}, err
		}
		want = Condition(claim, list.Items)
	}
	status, changed := WithCondition(claim.Status, want, metav1.Now())
	if !changed {
		return reconcile.Result{}, nil
	}
	patched := claim.DeepCopy()
	patched.Status = status
	// A merge patch of the conditions list only: the PV controller owns the
	// phase and may have moved it meanwhile; an optimistic lock makes a stale
	// decision fail and run again on fresh state.
	err := c.client.Status().Patch(ctx, patched, client.MergeFromWithOptions(claim, client.MergeFromWithOptimisticLock{}))
	if apierrors.IsConflict(err) {
		return reconcile.Result{Requeue: true}, nil
	}
	return reconcile.Result{}, client.IgnoreNotFound(err)
}

// Condition is what claim's condition should say given events in its
// namespace: the latest telling event on that very claim (by UID), or nil.
func Condition(claim *corev1.PersistentVolumeClaim, events []corev1.Event) *corev1.PersistentVolumeClaimCondition {
	var latest *corev1.Event
	for i := range events {
		e := &events[i]
		if !telling(e) || e.InvolvedObject.Kind != claimKind || e.InvolvedObject.UID != claim.UID {
			continue
		}
		if latest == nil || lastSeen(e).After(lastSeen(latest).Time) {
			latest = e
		}
	}
	if latest == nil {
		return nil
	}
	return &corev1.PersistentVolumeClaimCondition{
		Type:    ConditionType,
		Status:  corev1.ConditionTrue,
		Reason:  latest.Reason,
		Message: message(latest),
	}
}

// message is the event's message and who reported it on the host: the team
// reads it in its own cluster, where neither the host claim nor its events are.
func message(e *corev1.Event) string {
	by := e.ReportingController
	if by == "" {
		by = e.Source.Component
	}
	msg := strings.TrimSpace(e.Message)
	if by == "" {
		return "on the host: " + msg
	}
	return fmt.Sprintf("on the host (%s): %s", by, msg)
}

// lastSeen is when the event last happened, whichever API wrote it.
func lastSeen(e *corev1.Event) metav1.Time {
	switch {
	case e.Series != nil && !e.Series.LastObservedTime.IsZero():
		return metav1.Time{Time: e.Series.LastObservedTime.Time}
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp
	case !e.EventTime.IsZero():
		return metav1.Time{Time: e.EventTime.Time}
	}
	return e.CreationTimestamp
}

// WithCondition returns status with ConditionType set to want (nil: removed)
// and whether that changed anything. The transition time moves only when the
// reason does; other conditions are kept as they are.
func WithCondition(status corev1.PersistentVolumeClaimStatus, want *corev1.PersistentVolumeClaimCondition, now metav1.Time) (corev1.PersistentVolumeClaimStatus, bool) {
	out := status.DeepCopy()
	out.Conditions = nil
	var old *corev1.PersistentVolumeClaimCondition
	for i := range status.Conditions {
		if status.Conditions[i].Type == ConditionType {
			old = &status.Conditions[i]
			continue
		}
		out.Conditions = append(out.Conditions, status.Conditions[i])
	}
	if want == nil {
		return *out, old != nil
	}
	if old != nil && old.Status == want.Status && old.Reason == want.Reason && old.Message == want.Message {
		return status, false
	}
	c := *want
	c.LastProbeTime = now
	c.LastTransitionTime = now
	if old != nil && old.Reason == want.Reason {
		c.LastTransitionTime = old.LastTransitionTime
	}
	out.Conditions = append(out.Conditions, c)
	return *out, true
}
