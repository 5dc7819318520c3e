package contract

// What the idle policy (manager/idle) writes on a team's host objects while it
// routes the team's API address through the manager's waker.
const (
	// AnnotationIdleSelector, on the vCluster's Service, holds (JSON) the selector
	// the manager removed to route the Service to its waker; restoring it routes
	// the Service back to the control plane.
	AnnotationIdleSelector = "gpuvc.dev/idle-selector"
	// AnnotationAwakeReplicas, on the control plane's StatefulSet or Deployment,
	// holds the replicas it had before it was scaled to zero for sleep.
	AnnotationAwakeReplicas = "gpuvc.dev/awake-replicas"
	// WakerSliceName is the EndpointSlice, beside the Service's own, that points
	// the Service at the manager's waker.
	WakerSliceName = "gpuvc-waker"
	// WakerManagedBy is the endpointslice.kubernetes.io/managed-by value of the
	// waker's EndpointSlice (the EndpointSlice controller leaves it alone).
	WakerManagedBy = "idle.gpuvc.dev"
)

// AnnotationIdleRequest, on a Team, asks the manager to put its vCluster to sleep
// now (IdleRequestSleep) or wake it (IdleRequestWake): `gpuvc team sleep|wake`.
// The manager removes it once it has acted. IdleRequestSleepIdleGPUs is the
// manager's own (spec.idle.gpuPods.action Sleep: every GPU pod of the team
// idle): the vCluster sleeps and the team's pods are evicted, running or not.
const (
	AnnotationIdleRequest    = "gpuvc.dev/idle-request"
	IdleRequestSleep         = "sleep"
	IdleRequestWake          = "wake"
	IdleRequestSleepIdleGPUs = "sleep-idle-gpus"
)
