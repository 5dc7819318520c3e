// Package vclusters is gpuvc's seam to vCluster: it turns a Spec (one team's virtual
// cluster, described without the Team API) into vCluster Helm values, installs,
// upgrades and uninstalls the vCluster chart with the Helm v3 Go SDK, reports
// readiness, and hands out the kubeconfig vCluster exports.
//
// Everything is keyed by the Spec: the release lives in Spec.Namespace, its history
// in Helm's Secret storage there, so a restarted caller needs no state of its own.
package vclusters
