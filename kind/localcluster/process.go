package localcluster

import "github.com/gpuvc/gpuvc/kind/supervise"

// Alive reports whether a process id is still running; tests use it to prove that
// nothing the control plane started outlives it.
func Alive(pid int) bool { return supervise.Alive(pid) }
