package syncer

import (
	"context"
	"fmt"

	"github.com/gpuvc/gpuvc/manager/api/contract"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// NamespacePolicies is a PolicySource that reads a namespace's gpuvc.dev/team and
// gpuvc.dev/pool labels and completes them from a static per-team table. It
// stands in until the manager derives policies from Team objects.
type NamespacePolicies struct {
	Reader client.Reader
	// Teams holds each team's policy by team name; Team, Namespace and Pool are
	// filled from the namespace. A labelled namespace of a team missing here is
	// refused rather than admitted without limits.
	Teams map[string]TeamPolicy
}

var _ PolicySource = (*NamespacePolicies)(nil)

// TeamPolicy implements PolicySource.
func (s *NamespacePolicies) TeamPolicy(ctx context.Context, namespace string) (*TeamPolicy, error) {
	var ns corev1.Namespace
	if err := s.Reader.Get(ctx, client.ObjectKey{Name: namespace}, &ns); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, ErrNotTeamNamespace
		}
		return nil, fmt.Errorf("reading namespace %s: %w", namespace, err)
	}
	team := ns.Labels[contract.LabelTeam]
	if team == "" {
		return nil, ErrNotTeamNamespace
	}
	pool := ns.Labels[contract.LabelPool]
	if pool == "" {
		return nil, fmt.Errorf("namespace %s of team %q has no %s label: label it with the team's node pool", namespace, team, contract.LabelPool)
	}
	p, ok := s.Teams[team]
	if !ok {
		return nil, fmt.Errorf("namespace %s is labelled %s=%s but gpuvc has no policy for team %q", namespace, contract.LabelTeam, team, team)
	}
	if p.Pool != "" && p.Pool != pool {
		return nil, fmt.Errorf("namespace %s says pool %q but team %q's policy says pool %q: fix one of them", namespace, pool, team, p.Pool)
	}
	p.Team, p.Namespace, p.Pool = team, namespace, pool
	return &p, nil
}
