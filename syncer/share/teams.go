package share

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpuvc/gpuvc/api/contract"
)

// DefaultMaxPodsPerGPU is the Team API's default of
// spec.gpuSharing.maxPodsPerSharedGPU.
const DefaultMaxPodsPerGPU = 8

// ErrNotTeamNamespace is returned by a TeamSource for namespaces gpuvc does not
// manage; the controller leaves their pods alone.
var ErrNotTeamNamespace = errors.New("not a team namespace")

// Team is what the share controller needs to know about the team owning a
// namespace.
type Team struct {
	Name string // e.g. "fraud"
	// Pool is the team's node pool: reservation pods select gpuvc.dev/pool=<Pool>
	// and tolerate its NoSchedule taint.
	Pool string
	// MaxPodsPerGPU bounds the pods sharing one reservation; 0 means
	// DefaultMaxPodsPerGPU.
	MaxPodsPerGPU int
	// FractionLimits, if set, puts HAMi-core's limits in share pods' environment.
	FractionLimits *FractionLimits
}

func (t Team) maxPods() int {
	if t.MaxPodsPerGPU > 0 {
		return t.MaxPodsPerGPU
	}
	return DefaultMaxPodsPerGPU
}

// TeamSource finds the team owning a host namespace. The manager can back it
// with Team objects (spec.pool, spec.gpuSharing.maxPodsPerSharedGPU).
type TeamSource interface {
	// ShareTeam returns the namespace's team, ErrNotTeamNamespace, or another
	// error (retried).
	ShareTeam(ctx context.Context, namespace string) (Team, error)
}

// NamespaceTeams reads a namespace's gpuvc.dev/team and gpuvc.dev/pool labels,
// the same labels syncertest.NamespacePolicies reads for the webhook's tests.
type NamespaceTeams struct {
	Reader client.Reader
	// MaxPodsPerGPU by team name; teams missing here get Default.
	MaxPodsPerGPU map[string]int
	// Default applies to teams not in MaxPodsPerGPU; 0 means DefaultMaxPodsPerGPU.
	Default int
	// FractionLimits by team name; teams missing here get none.
	FractionLimits map[string]FractionLimits
}

var _ TeamSource = NamespaceTeams{}

// ShareTeam implements TeamSource.
func (s NamespaceTeams) ShareTeam(ctx context.Context, namespace string) (Team, error) {
	var ns corev1.Namespace
	if err := s.Reader.Get(ctx, client.ObjectKey{Name: namespace}, &ns); err != nil {
		if apierrors.IsNotFound(err) {
			return Team{}, ErrNotTeamNamespace
		}
		return Team{}, fmt.Errorf("reading namespace %s: %w", namespace, err)
	}
	name := ns.Labels[contract.LabelTeam]
	if name == "" {
		return Team{}, ErrNotTeamNamespace
	}
	pool := ns.Labels[contract.LabelPool]
	if pool == "" {
		return Team{}, fmt.Errorf("namespace %s of team %q has no %s label: label it with the team's node pool", namespace, name, contract.LabelPool)
	}
	max, ok := s.MaxPodsPerGPU[name]
	if !ok {
		max = s.Default
	}
	t := Team{Name: name, Pool: pool, MaxPodsPerGPU: max}
	if l, ok := s.FractionLimits[name]; ok {
		t.FractionLimits = &l
	}
	return t, nil
}
