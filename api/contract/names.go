package contract

// Objects the manager creates in a team's host namespace for other components
// (the CLI, the share controller) to find.
const (
	// KubeconfigSecretName holds the team's kubeconfig under KubeconfigSecretKey.
	KubeconfigSecretName = "gpuvc-kubeconfig"
	KubeconfigSecretKey  = "config"
	// ReserveServiceAccount runs reservation pods: it may read and annotate pods of
	// its own namespace (to record the GPU it holds), nothing else.
	ReserveServiceAccount = "gpuvc-reserve"
)

// TeamNamespacePrefix starts every team's host namespace: team-<name>
// (v1alpha1.HostNamespace). The agent, which may not read namespaces, derives a
// pod's team from it.
const TeamNamespacePrefix = "team-"
