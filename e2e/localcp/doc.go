// Package localcp runs a real Kubernetes control plane as local processes — etcd,
// kube-apiserver, kube-controller-manager, kube-scheduler — plus kwok, which turns
// fake Nodes carrying GPU capacity into Ready nodes and runs the pods bound to them.
//
// Tests use it instead of kind on machines without a container engine: the API
// server, the scheduler, quota admission and every controller are the real
// binaries, built once from Go modules and cached outside the repository.
package localcp
