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
	// ConditionNetworkPoliciesHonored: the NetworkPolicies the team writes in its
	// cluster narrow its pods' traffic on the host as written. False when their
	// pod selectors would need more host policies than gpuvc writes: the team's
	// namespace then stays open to itself (other teams stay shut out). Not part of
	// Ready: the team's cluster works either way.
	ConditionNetworkPoliciesHonored = "NetworkPoliciesHonored"
)

// ReasonProvisioning: a Team's Ready condition while it is created, from the
// manager's first look; the message names the step under way (namespace,
// policies, vCluster chart) and what comes next.
const ReasonProvisioning = "Provisioning"

// Reasons of a Team's Ready condition while the Team is being deleted; the
// condition's message says what the deletion waits for.
const (
	// ReasonDeleting: the host namespace is being deleted (the message names what
	// still holds it).
	ReasonDeleting = "Deleting"
	// ReasonUninstallFailed: the vCluster release could not be uninstalled; retried.
	ReasonUninstallFailed = "UninstallFailed"
)

// Finalizer holds a Team until its host objects are gone.
const Finalizer = "gpuvc.dev/team-cleanup"

// HostNamespace is the host namespace of a team.
func HostNamespace(team string) string { return "team-" + team }

// ReleaseName is the vCluster Helm release of a team: the team's name, which keeps
// host pod names (<pod>-x-<namespace>-x-<release>) short.
func ReleaseName(t *Team) string { return t.Name }
