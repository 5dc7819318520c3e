// Package localcluster runs a real Kubernetes control plane as local processes —
// etcd, kube-apiserver, kube-controller-manager, kube-scheduler — plus kwok, which
// turns fake Nodes carrying GPU capacity into Ready nodes and runs the pods bound to
// them. A real worker node joins it with package kind/localnode.
//
// It is what `gpuvc dev cluster` and the Docker-less `gpuvc dev trial` run, and what
// the tests run instead of kind on machines without a container engine. It never
// builds anything: it finds prebuilt binaries through the manifest that the builder
// (`make binaries`, package e2e/localcp) writes into the cache (see Manifest); when
// they are missing it says what to run.
package localcluster
