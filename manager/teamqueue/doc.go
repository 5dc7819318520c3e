// Package teamqueue turns a Team's spec.queueing into the Kueue objects that make
// its GPU quota elastic: a ResourceFlavor per pool and GPU kind (whole GPUs, each
// MIG profile), a ClusterQueue per team in its pool's cohort (nominal quota =
// guarantee, borrowing and lending limits, reclaim within the cohort, fair-share
// weight) and a LocalQueue in the team's host namespace that its GPU pods name.
//
// The objects are unstructured, built from the small mirror types in kueue.go
// rather than Kueue's Go API: Kueue v0.17's module pins k8s.io v0.35 and
// controller-runtime v0.23 and would move eight of gpuvc's shared indirect
// dependencies, for three kinds and a dozen fields. The wire format is the
// contract either way; the API server checks every object against Kueue's CRD
// schema, strictly (unknown fields are refused), and the tests run against the
// real Kueue.
package teamqueue
