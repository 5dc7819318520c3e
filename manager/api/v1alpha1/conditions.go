package v1alpha1

// Condition types a Team reports.
const (
	// ConditionReady is true when everything below is.
	ConditionReady = "Ready"
	// ConditionHostResourcesReady: namespace, quota, limits, policies, network and RBAC exist as specified.
	ConditionHostResourcesReady = "HostResourcesReady"
	// ConditionVClusterReady: the vCluster release is deployed and its control plane is ready.
	ConditionVClusterReady = "VClusterReady"
	// ConditionKubeconfigReady: the team's kubeconfig Secret exists with a reachable server.
	ConditionKubeconfigReady = "KubeconfigReady"
	// ConditionDeleting: set once a Team is being deleted; its reason and message say
	// what the deletion still waits for.
	ConditionDeleting = "Deleting"
)

// Labels gpuvc puts on host objects.
const (
	LabelTeam = "gpuvc.dev/team"
	LabelPool = "gpuvc.dev/pool"
)

// Finalizer holds a Team until its host objects are gone.
const Finalizer = "gpuvc.dev/team-cleanup"

// HostNamespace is the host namespace of a team.
func HostNamespace(team string) string { return "team-" + team }
