// Package idlegpu holds tests only: the manager as `gpuvc manager
// --agent-metrics-port --agent-namespace` assembles it (manager.New, in
// process) applies a Team's spec.idle.gpuPods on the local control plane with
// kwok GPU nodes, reading GPU utilization from an agent pod found by the
// chart's labels whose /metrics is the agent's own collector behind httptest.
// The idle policy's clock is a fake one the test advances, one minute per look
// of the manager, so the 5-minute minimum of spec.idle.gpuPods.after passes in
// seconds.
package idlegpu
