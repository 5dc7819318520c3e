package contract

// Keys of Kueue (sigs.k8s.io/kueue) gpuvc writes and reads: its plain-Pod
// integration queues a pod that carries LabelKueueQueueName, holding it behind
// KueueAdmissionGate until its Workload is admitted.
const (
	LabelKueueQueueName = "kueue.x-k8s.io/queue-name"
	// LabelKueuePriorityClass names the WorkloadPriorityClass of a pod's
	// Workload; a team may name only the classes its spec.queueing allows.
	LabelKueuePriorityClass = "kueue.x-k8s.io/priority-class"
	// LabelKueuePrebuiltWorkload attaches a pod to an existing Workload object
	// instead of one Kueue builds from the pod; gpuvc removes it.
	LabelKueuePrebuiltWorkload = "kueue.x-k8s.io/prebuilt-workload-name"
	KueueAdmissionGate         = "kueue.x-k8s.io/admission"
	// KueueLocalQueueName is the LocalQueue the manager creates in a queueing
	// team's host namespace; the team's GPU pods name it.
	KueueLocalQueueName = "gpuvc"
	// KueueDefaultUser is the identity of Kueue's controller as Kueue's own
	// manifests install it (namespace kueue-system, ServiceAccount
	// kueue-controller-manager): the only user that may lift KueueAdmissionGate
	// from a team's pod unless the manager is told otherwise (--kueue-user).
	KueueDefaultUser = "system:serviceaccount:kueue-system:kueue-controller-manager"
	// ReasonQueueFull is the webhook's refusal of a queueing team's pod beyond
	// its ceiling plus queue depth ("gpuvc: QueueFull: ..."); the share
	// controller takes it, like ResourceQuota's, for a quota refusal.
	ReasonQueueFull = "QueueFull"
)

// Kueue's API as gpuvc uses it: the group, the version gpuvc writes
// (KueueAPIVersion, served since KueueMinVersion) and the Kueue release the tests
// run (KueueTestedVersion, kind/localcluster.KueueVersion).
const (
	KueueGroup         = "kueue.x-k8s.io"
	KueueAPIVersion    = "v1beta2"
	KueueMinVersion    = "v0.15.0"
	KueueTestedVersion = "v0.17.0"
)
