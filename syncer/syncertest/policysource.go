// Package syncertest holds stand-ins for testing the syncer without the manager,
// as net/http/httptest does for net/http.
package syncertest

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpuvc/gpuvc/api/contract"
	"github.com/gpuvc/gpuvc/syncer"
)

// NamespacePolicies is a syncer.PolicySource for testing the webhook without the
// manager: it reads a namespace's gpuvc.dev/team and gpuvc.dev/pool labels and
// completes them from a static per-team table. The manager derives policies
// from Team objects instead (manager/teampolicy.Source).
type NamespacePolicies struct {
	Reader client.Reader
	// Teams holds each team's policy by team name; Team, Namespace and Pool are
	// filled from the namespace. A labelled namespace of a team missing here is
	// refused rather than admitted without limits.
	Teams map[string]syncer.TeamPolicy
}

var _ syncer.PolicySource = (*NamespacePolicies)(nil)

// TeamPolicy implements syncer.PolicySource.
func (s *NamespacePolicies) TeamPolicy(ctx context.Context, namespace string) (*syncer.TeamPolicy, error) {
	var ns corev1.Namespace
	if err := s.Reader.Get(ctx, client.ObjectKey{Name: namespace}, &ns); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, syncer.ErrNotTeamNamespace
		}
		return nil, fmt.Errorf("reading namespace %s: %w", namespace, err)
	}
	team := ns.Labels[contract.LabelTeam]
	if team == "" {
		return nil, syncer.ErrNotTeamNamespace
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
