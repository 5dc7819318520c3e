// Package images builds the container images the end-to-end node runs — pause,
// vCluster, its Kubernetes distro, CoreDNS, gpuvc and a test workload — from files on
// this machine, without Docker or a registry.
//
// An image is described by a Spec (a reference, files, directories, symlinks and the
// process config). Build turns it into a single-layer docker-archive tarball that
// `ctr -n k8s.io images import` accepts. Each image carries the exact reference its
// chart asks for, so the charts run unchanged with imagePullPolicy IfNotPresent or
// Never. Layers are deterministic (sorted entries, fixed times, root ownership unless a
// spec says otherwise): the same inputs give the same digest, and Build skips the
// work when the tarball for those inputs is already in the cache.
//
// The cache is shared by every run on the machine: a build removes an image's
// older tarballs only when no run holds them (Hold) and none used them within
// KeepUnused, so concurrent runs building different gpuvc binaries do not pull
// each other's tarballs away before they are imported.
package images
