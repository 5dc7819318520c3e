package team

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/gpuvc/gpuvc/api/teamstatus"
	gpuvcv1 "github.com/gpuvc/gpuvc/api/v1alpha1"
	"github.com/gpuvc/gpuvc/vclusters"
)

// delete tears a team down: uninstall the vCluster release (so Helm's hooks and its
// own cleanup run), then delete the namespace with everything in it — synced pods,
// the syncer's reservation pods and ConfigMaps, quota, policies — and release the
// finalizer once the namespace is gone. Each pass is idempotent. While it waits or
// fails, the Team's Ready condition says on what (reason Deleting or
// UninstallFailed), with an event at each change; like every status write of the
// reconciler, only on change and only of its own fields (teamstatus).
func (r *Reconciler) delete(ctx context.Context, t *gpuvcv1.Team) (reconcile.Result, error) {
	if !controllerutil.ContainsFinalizer(t, gpuvcv1.Finalizer) {
		return reconcile.Result{}, nil
	}
	w := teamstatus.Reconciler.Writer(r.client, t)
	b := r.teardown(ctx, t)
	if b == nil {
		r.forget(t.Name)
		return r.releaseFinalizer(ctx, t)
	}

	before := apimeta.FindStatusCondition(t.Status.Conditions, gpuvcv1.ConditionReady)
	changed := before == nil || before.Reason != b.reason || before.Message != b.message
	r.condition(t, gpuvcv1.ConditionReady, false, b.reason, b.message)
	t.Status.ObservedGeneration = t.Generation
	if _, perr := w.Write(ctx, t); perr != nil {
		return reconcile.Result{}, errors.Join(b.err, perr)
	}
	if changed {
		eventType := corev1.EventTypeNormal
		if b.err != nil {
			eventType = corev1.EventTypeWarning
		}
		r.recorder.Eventf(t, nil, eventType, b.reason, "Delete", "%s", b.message)
	}
	if b.err != nil {
		return reconcile.Result{}, b.err
	}
	// The namespace controller empties it; the namespace watch wakes us when it is gone.
	return reconcile.Result{RequeueAfter: r.opts.WaitInterval}, nil
}

// releaseFinalizer lets the Team go. The patch carries the resourceVersion read:
// a merge patch replaces the whole finalizers list, so one written meanwhile by
// someone else would otherwise be dropped.
func (r *Reconciler) releaseFinalizer(ctx context.Context, t *gpuvcv1.Team) (reconcile.Result, error) {
	orig := t.DeepCopy()
	controllerutil.RemoveFinalizer(t, gpuvcv1.Finalizer)
	err := r.client.Patch(ctx, t, ctrl.MergeFromWithOptions(orig, ctrl.MergeFromWithOptimisticLock{}))
	switch {
	case apierrors.IsConflict(err):
		// Their watch event brings the Team back as well; the pass runs again
		// within a second, on what they wrote.
		log.FromContext(ctx).V(1).Info("team changed meanwhile; releasing the finalizer again", "err", err)
		return reconcile.Result{RequeueAfter: time.Second}, nil
	case apierrors.IsNotFound(err):
		return reconcile.Result{}, nil
	}
	return reconcile.Result{}, err
}

// blocked says why a team's deletion cannot finish yet.
type blocked struct {
	reason, message string
	// err is retried with backoff; nil: waiting for the namespace to go.
	err error
}

// teardown takes the next idempotent step of removing t's release and namespace;
// nil when both are gone.
func (r *Reconciler) teardown(ctx context.Context, t *gpuvcv1.Team) *blocked {
	spec := r.vclusterSpec(t)
	if err := r.vclusters.Uninstall(ctx, spec); err != nil && !neverInstalled(err) {
		return &blocked{gpuvcv1.ReasonUninstallFailed,
			fmt.Sprintf("uninstalling vCluster release %s in namespace %s: %v", spec.Name, spec.Namespace, err), err}
	}
	ns := &corev1.Namespace{}
	err := r.client.Get(ctx, types.NamespacedName{Name: spec.Namespace}, ns)
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return &blocked{gpuvcv1.ReasonDeleting, fmt.Sprintf("reading namespace %s: %v", spec.Namespace, err), err}
	}
	if ns.DeletionTimestamp.IsZero() {
		policy := metav1.DeletePropagationForeground
		if err := r.client.Delete(ctx, ns, &ctrl.DeleteOptions{PropagationPolicy: &policy}); err != nil && !apierrors.IsNotFound(err) {
			return &blocked{gpuvcv1.ReasonDeleting, fmt.Sprintf("deleting namespace %s: %v", ns.Name, err), err}
		}
	}
	return &blocked{reason: gpuvcv1.ReasonDeleting, message: namespaceWait(ns)}
}

// neverInstalled: Uninstall found no release, or refused names Apply would have
// refused too (teams named before names were validated, such as a.b or 9ml), so
// gpuvc cannot have installed one.
func neverInstalled(err error) bool {
	return errors.Is(err, vclusters.ErrInvalidSpec) || errors.Is(err, vclusters.ErrReleaseNotFound)
}

// namespaceWait says what holds a team's namespace: the namespace controller's
// report of remaining content and the finalizers left.
func namespaceWait(ns *corev1.Namespace) string {
	var held []string
	for _, c := range ns.Status.Conditions {
		if c.Status == corev1.ConditionTrue && c.Message != "" {
			held = append(held, c.Message)
		}
	}
	if len(ns.Spec.Finalizers) > 0 {
		held = append(held, fmt.Sprintf("namespace finalizers %v", ns.Spec.Finalizers))
	}
	if len(ns.Finalizers) > 0 {
		held = append(held, fmt.Sprintf("finalizers %v", ns.Finalizers))
	}
	msg := "no vCluster release left; waiting for namespace " + ns.Name + " to be deleted"
	if len(held) > 0 {
		msg += ": " + strings.Join(held, "; ")
	}
	return msg
}
