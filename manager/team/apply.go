package team

import (
	"context"
	"errors"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gpuvcv1 "github.com/gpuvc/gpuvc/api/v1alpha1"
)

// ownerRef makes the Team the controller of a host object: the object's changes
// wake the Team's reconciler, and garbage collection removes it with the Team.
func ownerRef(t *gpuvcv1.Team) *metav1ac.OwnerReferenceApplyConfiguration {
	return metav1ac.OwnerReference().
		WithAPIVersion(gpuvcv1.GroupVersion.String()).
		WithKind("Team").
		WithName(t.Name).
		WithUID(t.UID).
		WithController(true)
}

// apply writes the desired state with server-side apply, taking over fields someone
// else changed: that is how drift is repaired.
func (r *Reconciler) apply(ctx context.Context, obj runtime.ApplyConfiguration) error {
	return r.client.Apply(ctx, obj, client.FieldOwner(FieldOwner), client.ForceOwnership)
}

// applyAll applies objs at once, one request each: they do not depend on one
// another (a RoleBinding may name a Role not written yet), and a pass that
// sends them one after another waits a round trip for each — the larger part
// of a pass that changes nothing, and of a restart, which makes that pass for
// every team (docs/benchmarks.md, "Team create → release applied").
func (r *Reconciler) applyAll(ctx context.Context, objs ...runtime.ApplyConfiguration) error {
	errs := make([]error, len(objs))
	var wg sync.WaitGroup
	for i, obj := range objs {
		wg.Go(func() { errs[i] = r.apply(ctx, obj) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// deleteIfExists removes an object the Team no longer asks for.
func (r *Reconciler) deleteIfExists(ctx context.Context, obj client.Object) error {
	err := r.client.Delete(ctx, obj)
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
