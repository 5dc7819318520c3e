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
