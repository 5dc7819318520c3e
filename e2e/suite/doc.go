// Package suite is gpuvc's end-to-end suite: one set of scenarios run against a
// backend — a kind cluster when a Docker engine answers, otherwise the local
// control plane (real API server, scheduler and controller manager; kwok GPU nodes)
// with the gpuvc binary running as the manager process. Scenarios that need
// something a backend lacks skip with the reason.
package suite
