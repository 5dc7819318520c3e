// Package contract names what gpuvc's components agree on across process and
// API boundaries: the gpuvc.dev/ labels, annotations, taints and gates on host
// objects, the keys gpuvc reads from what tenants write, the NVIDIA resource
// names and GPU Feature Discovery labels, and the names of host objects the
// manager creates for others to find. It is a leaf: standard library only, so
// every layer (gpu, syncer, manager, vclusters, kind, the CLI) may import it.
package contract
