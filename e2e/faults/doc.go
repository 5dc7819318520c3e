// Package faults holds tests only: fault injection on the local control plane.
// The gpuvc manager (Team reconciler, pod webhook and share controller in one
// process, the real binary) is SIGKILLed at seeded random instants and the API
// server restarted while fractional pods churn and teams come and go; a watcher
// checks the GPU shares at every event, and afterwards nothing may be leaked,
// stuck or half-done. GPUVC_FAULTS=full runs the long version (docs/benchmarks.md).
package faults
