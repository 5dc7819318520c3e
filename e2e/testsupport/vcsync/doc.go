// Package vcsync runs vCluster's own pod syncer (github.com/loft-sh/vcluster
// v0.36.1, pkg/controllers/resources/pods) on fake virtual and host clients, the
// way vCluster's unit tests do, and returns what it would send to the host API
// server: the host pod it creates for a virtual pod (Translate) and the writes of
// its update path when a host or virtual pod changes (Sync).
//
// It is test support: gpuvc's integration tests use it to produce host pods from
// the virtual pods a tenant writes, so names, labels and annotations come from
// vCluster and not from a copy of its rules. Only tests may import it: the gpuvc
// binary must not link vCluster.
//
// vCluster keeps its configuration in package-level variables (the vCluster name,
// the namespace translator, the DNS resolver); calls are serialised and those
// variables restored afterwards. See docs/vcsync.md for what is and is not
// modelled.
package vcsync
