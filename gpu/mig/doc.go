// Package mig knows the MIG (Multi-Instance GPU) geometry of the GPU models
// gpuvc schedules onto: which profiles each model offers, where the driver lets
// a GPU instance start, and how to lay out or map profile requests.
//
// Numbers (profiles, instance limits, placements, driver profile ids) follow
// NVIDIA's "Multi-Instance GPU User Guide", sections "Supported MIG Profiles"
// and "Getting Started with MIG" (nvidia-smi mig -lgip / -lgipp output).
// Memory sizes in MiB are what NVML reports for a profile (GPU Feature
// Discovery's nvidia.com/mig-<profile>.memory label); values that could not be
// confirmed are marked with MemoryEstimated and documented in docs/gpu.md.
//
// The package is free of Kubernetes types: callers translate pods and nodes.
package mig
