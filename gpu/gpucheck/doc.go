// Package gpucheck proves on a machine with NVIDIA GPUs that gpuvc reads them
// right: everything gpuvc takes from NVML (the agent's inventory and labels,
// the MIG catalog, utilization and memory, XID/ECC event registration, the
// fraction limits) is set beside what nvidia-smi, GPU Feature Discovery's
// documented labels and NVML's own profile tables say. Each step reports rows
// (gpuvc's value, the reference, and whether they agree) and its time; a
// difference fails the check. `make gpu-check` and cmd/gpu-check run it on a
// real GPU; its tests replay a real H200's answers through go-nvml's mocks.
package gpucheck
