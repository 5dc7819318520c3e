package team

import (
	gpuvcv1 "github.com/gpuvc/gpuvc/manager/api/v1alpha1"
	"github.com/gpuvc/gpuvc/syncer"
)

// Names of the host objects the manager owns in a team namespace.
const (
	QuotaName              = "gpuvc-quota"
	LimitRangeName         = "gpuvc-limits"
	NetworkPolicyName      = "gpuvc-default-deny"
	ControlPlanePolicyName = "gpuvc-allow-vcluster"
	ReservationPolicyName  = "gpuvc-allow-reservations"
	MemberRoleName         = "gpuvc-team-member"
	KubeconfigSecretName   = "gpuvc-kubeconfig"
	// ReserveServiceAccount runs reservation pods: it may read and annotate pods of
	// its own namespace (to record the GPU it holds), nothing else.
	ReserveServiceAccount = syncer.ReserveServiceAccount
	KubeconfigSecretKey   = "config"

	// FieldOwner is the server-side apply field manager of everything the manager writes.
	FieldOwner = "gpuvc-manager"
	// LabelManagedBy marks host objects the manager created.
	LabelManagedBy = "app.kubernetes.io/managed-by"
	managedBy      = "gpuvc"
)

// ReleaseName is the vCluster Helm release of a team: the team's name, which keeps
// host pod names (<pod>-x-<namespace>-x-<release>) short.
func ReleaseName(t *gpuvcv1.Team) string { return t.Name }

func teamLabels(t *gpuvcv1.Team) map[string]string {
	return map[string]string{
		gpuvcv1.LabelTeam: t.Name,
		LabelManagedBy:    managedBy,
	}
}
