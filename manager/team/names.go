package team

import (
	"github.com/gpuvc/gpuvc/api/contract"
	gpuvcv1 "github.com/gpuvc/gpuvc/api/v1alpha1"
)

// Names of the host objects the manager owns in a team namespace.
const (
	QuotaName              = "gpuvc-quota"
	LimitRangeName         = "gpuvc-limits"
	NetworkPolicyName      = "gpuvc-default-deny"
	ControlPlanePolicyName = "gpuvc-allow-vcluster"
	ReservationPolicyName  = "gpuvc-allow-reservations"
	DNSPolicyName          = "gpuvc-allow-dns"
	MemberRoleName         = "gpuvc-team-member"
	// NamespaceAllowPrefix names the policies that let pods of the namespace
	// reach each other: <prefix>-ingress-<n> and <prefix>-egress-<n>, one per
	// selector of the pods no team policy selects (network_team.go).
	NamespaceAllowPrefix = "gpuvc-allow-namespace"

	// FieldOwner is the server-side apply field manager of everything the manager writes.
	FieldOwner = "gpuvc-manager"
	// LabelManagedBy marks host objects the manager created.
	LabelManagedBy = "app.kubernetes.io/managed-by"
	managedBy      = "gpuvc"
)

func teamLabels(t *gpuvcv1.Team) map[string]string {
	return map[string]string{
		contract.LabelTeam: t.Name,
		LabelManagedBy:     managedBy,
	}
}
