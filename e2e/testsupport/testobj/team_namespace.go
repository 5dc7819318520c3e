package testobj

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/gpuvc/gpuvc/api/contract"
)

// TeamNamespace returns team's host namespace (team-<team>) labelled the way the
// manager labels it: gpuvc.dev/team and the team's node pool.
func TeamNamespace(team, pool string) *corev1.Namespace {
	return Namespace("team-"+team, map[string]string{
		contract.LabelTeam: team,
		contract.LabelPool: pool,
	})
}

// PodSecurityLabels are the Pod Security Admission labels the manager gives a
// team namespace for the team's podSecurity level.
func PodSecurityLabels(level string) map[string]string {
	return map[string]string{
		"pod-security.kubernetes.io/enforce":         level,
		"pod-security.kubernetes.io/enforce-version": "latest",
		"pod-security.kubernetes.io/warn":            level,
		"pod-security.kubernetes.io/audit":           level,
	}
}
