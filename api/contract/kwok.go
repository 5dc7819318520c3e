package contract

// Keys of kwok (sigs.k8s.io/kwok), which fakes nodes: no kubelet, no container
// ever runs on them.
const (
	// AnnotationKwokNode marks a Node kwok manages, by kwok's convention with the
	// value "fake" (gpuvc's local control plane runs kwok with
	// --manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake). The share
	// controller records reservation GPU UUIDs itself only on such nodes: there
	// no `gpuvc reserve` runs to report the GPU it was given.
	AnnotationKwokNode = "kwok.x-k8s.io/node"
)
