package integration

import (
	"testing"

	"github.com/gpuvc/gpuvc/e2e/testsupport/bench"
)

// BenchmarkAdmission measures pod creation through the real API server in a team
// namespace (mutating + validating webhook, no CEL policy) and in a plain
// namespace (no webhook), one-GPU pods: bench.Admission. This process serves the webhook, so
// its peak RSS bounds the webhook's memory.
func BenchmarkAdmission(b *testing.B) {
	if testing.Short() || env.cp == nil {
		b.Skip("needs the local control plane (run without -short)")
	}
	bench.Admission(b, env.cp.Client, "team-fraud", "plain", "1")
}
