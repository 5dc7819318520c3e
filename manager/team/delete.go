package team

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	gpuvcv1 "github.com/gpuvc/gpuvc/manager/api/v1alpha1"
)

// delete tears a team down: uninstall the vCluster release (so Helm's hooks and its
// own cleanup run), then delete the namespace with everything in it — synced pods,
// the syncer's reservation pods and ConfigMaps, quota, policies — and release the
// finalizer once the namespace is gone. Each pass is idempotent.
func (r *Reconciler) delete(ctx context.Context, t *gpuvcv1.Team) (reconcile.Result, error) {
	if !controllerutil.ContainsFinalizer(t, gpuvcv1.Finalizer) {
		return reconcile.Result{}, nil
	}
	if err := r.vclusters.Uninstall(ctx, r.vclusterSpec(t)); err != nil {
		r.recorder.Eventf(t, nil, corev1.EventTypeWarning, "UninstallFailed", "Delete", "vCluster release %s: %v", ReleaseName(t), err)
		return reconcile.Result{}, fmt.Errorf("uninstalling vCluster release: %w", err)
	}
	ns := &corev1.Namespace{}
	err := r.client.Get(ctx, types.NamespacedName{Name: gpuvcv1.HostNamespace(t.Name)}, ns)
	switch {
	case apierrors.IsNotFound(err):
		orig := t.DeepCopy()
		controllerutil.RemoveFinalizer(t, gpuvcv1.Finalizer)
		return reconcile.Result{}, r.client.Patch(ctx, t, ctrl.MergeFrom(orig))
	case err != nil:
		return reconcile.Result{}, err
	}
	if ns.DeletionTimestamp.IsZero() {
		policy := metav1.DeletePropagationForeground
		if err := r.client.Delete(ctx, ns, &ctrl.DeleteOptions{PropagationPolicy: &policy}); err != nil && !apierrors.IsNotFound(err) {
			return reconcile.Result{}, err
		}
		r.recorder.Eventf(t, nil, corev1.EventTypeNormal, "Deleting", "Delete", "namespace %s is being deleted", ns.Name)
	}
	// The namespace controller empties it; the namespace watch wakes us when it is gone.
	return reconcile.Result{RequeueAfter: r.opts.WaitInterval}, nil
}
