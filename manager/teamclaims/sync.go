package teamclaims

import (
	"context"
	"errors"
	"fmt"
	"sync"

	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/gpuvc/gpuvc/api/contract"
)

// Team is the sync of one spec.dra team: Sync makes one full pass.
type Team struct {
	// Virtual is a client of the team's virtual cluster, Host of the host.
	Virtual, Host kubernetes.Interface
	// Namespace is the team's host namespace, Release its vCluster's name.
	Namespace, Release string
	// Classes are the DeviceClasses the team may use.
	Classes []string

	mu sync.Mutex
	// told is the last refusal told per virtual object (UID): a refused copy
	// is tried again at every pass (the platform may allow a class meanwhile)
	// but told once.
	told map[types.UID]string
}

// copySelector selects gpuvc's copies in the host namespace.
var copySelector = metav1.ListOptions{LabelSelector: contract.LabelDRACopy + "=true"}

// Sync copies the team's templates and claims to the host, removes copies
// whose virtual object is gone, writes the host claims' status back and shows
// the allowed DeviceClasses. It goes on past a failing step and returns every
// error.
func (s *Team) Sync(ctx context.Context) error {
	return errors.Join(s.syncTemplates(ctx), s.syncClaims(ctx), s.syncClasses(ctx))
}

func (s *Team) syncTemplates(ctx context.Context) error {
	virtual := s.Virtual.ResourceV1().ResourceClaimTemplates(metav1.NamespaceAll)
	host := s.Host.ResourceV1().ResourceClaimTemplates(s.Namespace)
	return reconcile(ctx, s, pass[*resourcev1.ResourceClaimTemplate]{
		kind: "ResourceClaimTemplate",
		list: both(virtual.List, host.List, func(l *resourcev1.ResourceClaimTemplateList) []resourcev1.ResourceClaimTemplate { return l.Items }),
		create: func(ctx context.Context, v *resourcev1.ResourceClaimTemplate) error {
			_, err := host.Create(ctx, hostTemplate(v, s.Namespace, s.Release), metav1.CreateOptions{FieldManager: fieldManager})
			return err
		},
		delete: func(ctx context.Context, h *resourcev1.ResourceClaimTemplate) error {
			return host.Delete(ctx, h.Name, deleteOptions(h.UID))
		},
	})
}

func (s *Team) syncClaims(ctx context.Context) error {
	virtual := s.Virtual.ResourceV1().ResourceClaims(metav1.NamespaceAll)
	host := s.Host.ResourceV1().ResourceClaims(s.Namespace)
	return reconcile(ctx, s, pass[*resourcev1.ResourceClaim]{
		kind: "ResourceClaim",
		list: both(virtual.List, host.List, func(l *resourcev1.ResourceClaimList) []resourcev1.ResourceClaim { return l.Items }),
		create: func(ctx context.Context, v *resourcev1.ResourceClaim) error {
			_, err := host.Create(ctx, hostClaim(v, s.Namespace, s.Release), metav1.CreateOptions{FieldManager: fieldManager})
			return err
		},
		delete: func(ctx context.Context, h *resourcev1.ResourceClaim) error {
			return host.Delete(ctx, h.Name, deleteOptions(h.UID))
		},
		copied: s.copyStatus,
	})
}

// fieldManager names gpuvc's writes in both clusters.
const fieldManager = "gpuvc-claim-sync"

func deleteOptions(uid types.UID) metav1.DeleteOptions {
	return metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}}
}

// object is a ResourceClaim or ResourceClaimTemplate pointer.
type object interface {
	metav1.Object
	*resourcev1.ResourceClaim | *resourcev1.ResourceClaimTemplate
}

// pass is how to read one kind's virtual objects and host copies, and how to
// write them.
type pass[P object] struct {
	kind string
	// list returns every virtual object and gpuvc's copies in the namespace.
	list   func(context.Context) (virtual, host []P, err error)
	create func(context.Context, P) error
	delete func(context.Context, P) error
	// copied, if set, runs for every virtual object with its host copy.
	copied func(ctx context.Context, v, h P) error
}

func reconcile[P object](ctx context.Context, s *Team, p pass[P]) error {
	virtual, host, err := p.list(ctx)
	if err != nil {
		// Nothing is removed on a partial view.
		return fmt.Errorf("listing the team's %ss and their copies in %s: %w", p.kind, s.Namespace, err)
	}
	hosts := make(map[string]P, len(host))
	for _, h := range host {
		hosts[h.GetName()] = h
	}
	wanted := make(map[string]bool, len(virtual))
	var errs []error
	for _, v := range virtual {
		if v.GetDeletionTimestamp() != nil {
			continue
		}
		name := HostName(v.GetName(), v.GetNamespace(), s.Release)
		wanted[name] = true
		h, ok := hosts[name]
		switch {
		case ok && !copyOf(objectMeta(h), objectMeta(v)):
			// The copy of an earlier object of this name: removed now,
			// the new one copied at a pass after it is gone.
			if err := p.delete(ctx, h); err != nil && !apierrors.IsNotFound(err) {
				errs = append(errs, fmt.Errorf("deleting the stale host copy %s/%s of %s %s/%s: %w", s.Namespace, name, p.kind, v.GetNamespace(), v.GetName(), err))
			}
		case !ok:
			err := p.create(ctx, v)
			switch {
			case err == nil:
				s.forget(v.GetUID())
			case refused(err):
				s.tell(ctx, p.kind, v, err)
			case apierrors.IsAlreadyExists(err):
				// a copy still being deleted (a claim's finalizer); next pass
			default:
				errs = append(errs, fmt.Errorf("copying %s %s/%s to %s/%s: %w", p.kind, v.GetNamespace(), v.GetName(), s.Namespace, name, err))
			}
		case p.copied != nil:
			if err := p.copied(ctx, v, h); err != nil {
				errs = append(errs, err)
			}
		}
	}
	for name, h := range hosts {
		// Owned objects are not gpuvc's copies (a claim the resource claim
		// controller made carries the tenant's template labels).
		if wanted[name] || len(h.GetOwnerReferences()) > 0 {
			continue
		}
		if err := p.delete(ctx, h); err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			errs = append(errs, fmt.Errorf("deleting host copy %s/%s, whose %s is gone: %w", s.Namespace, name, p.kind, err))
		}
	}
	return errors.Join(errs...)
}

// refused is an answer the host will give again until something changes: a
// fence's or the quota's refusal, an invalid object.
func refused(err error) bool {
	return apierrors.IsForbidden(err) || apierrors.IsInvalid(err) || apierrors.IsBadRequest(err)
}

func objectMeta[P object](o P) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: o.GetName(), Namespace: o.GetNamespace(), UID: o.GetUID(), Annotations: o.GetAnnotations()}
}

// both lists every object of the team's cluster (virtual) and gpuvc's copies
// in the host namespace (host).
func both[L, T any](virtual, host func(context.Context, metav1.ListOptions) (L, error), items func(L) []T) func(context.Context) ([]*T, []*T, error) {
	return func(ctx context.Context) ([]*T, []*T, error) {
		v, err := virtual(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, nil, err
		}
		h, err := host(ctx, copySelector)
		if err != nil {
			return nil, nil, err
		}
		return pointers(items(v)), pointers(items(h)), nil
	}
}

func pointers[T any](items []T) []*T {
	out := make([]*T, len(items))
	for i := range items {
		out[i] = &items[i]
	}
	return out
}
