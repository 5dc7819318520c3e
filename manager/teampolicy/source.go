// Package teampolicy maps a Team to what its pods may do (Policy, read by both
// fences: the syncer's webhook through Source, the CEL policy through the
// parameters the Team reconciler writes), and tells the syncer, for a host
// namespace, what the owning Team allows: Source is the syncer.PolicySource
// backed by Team objects.
package teampolicy

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpuvc/gpuvc/api/contract"
	gpuvcv1 "github.com/gpuvc/gpuvc/api/v1alpha1"
	"github.com/gpuvc/gpuvc/syncer"
	"github.com/gpuvc/gpuvc/syncer/share"
)

// Source builds TeamPolicies from Teams and the nodes of their pools.
type Source struct {
	Reader     client.Reader
	SystemPool string // pool of vCluster control planes; "" = syncer's default
}

var (
	_ syncer.PolicySource = Source{}
	_ share.TeamSource    = Source{}
)

// TeamPolicy returns the policy of the Team owning namespace. A namespace without
// the gpuvc.dev/team label is not a team namespace; a labelled one whose Team is
// missing or does not own it is an error, so its pods are refused (fail closed).
func (s Source) TeamPolicy(ctx context.Context, namespace string) (*syncer.TeamPolicy, error) {
	ns := &corev1.Namespace{}
	if err := s.Reader.Get(ctx, types.NamespacedName{Name: namespace}, ns); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, syncer.ErrNotTeamNamespace
		}
		return nil, err
	}
	name, ok := ns.Labels[contract.LabelTeam]
	if !ok {
		return nil, syncer.ErrNotTeamNamespace
	}
	t := &gpuvcv1.Team{}
	if err := s.Reader.Get(ctx, types.NamespacedName{Name: name}, t); err != nil {
		return nil, fmt.Errorf("namespace %s is labelled %s=%s but that Team cannot be read: %w", namespace, contract.LabelTeam, name, err)
	}
	if gpuvcv1.HostNamespace(t.Name) != namespace {
		return nil, fmt.Errorf("namespace %s is labelled %s=%s but that Team's namespace is %s", namespace, contract.LabelTeam, name, gpuvcv1.HostNamespace(t.Name))
	}
	product, memMiB, err := PoolGPU(ctx, s.Reader, t.Spec.Pool)
	if err != nil {
		return nil, err
	}
	return Policy(t, product, memMiB, s.SystemPool), nil
}

// ShareTeam tells the share controller the team owning a namespace: its pool and
// how many pods may share one GPU.
func (s Source) ShareTeam(ctx context.Context, namespace string) (share.Team, error) {
	p, err := s.TeamPolicy(ctx, namespace)
	if errors.Is(err, syncer.ErrNotTeamNamespace) {
		return share.Team{}, share.ErrNotTeamNamespace
	}
	if err != nil {
		return share.Team{}, err
	}
	t := &gpuvcv1.Team{}
	if err := s.Reader.Get(ctx, types.NamespacedName{Name: p.Team}, t); err != nil {
		return share.Team{}, err
	}
	st := share.Team{Name: t.Name, Pool: t.Spec.Pool}
	if g := t.Spec.GPUSharing; g != nil {
		st.MaxPodsPerGPU = int(g.MaxPodsPerSharedGPU)
		if l := g.FractionLimits; l != nil && l.Enabled {
			st.FractionLimits = &share.FractionLimits{ReserveMiB: l.EffectiveReserveMiB()}
		}
	}
	return st, nil
}
