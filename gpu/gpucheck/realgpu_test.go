//go:build gpu

package gpucheck

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// The check on this machine's real GPUs, for a GPU machine with Go:
// go test -tags gpu ./gpu/gpucheck (GPU_CHECK_REPORT names the report file).
// Without the tag it is not built: `make test` needs no GPU and runs the
// replayed H200 instead. bin/gpu-check (make gpu-check) is the same check as
// a binary that needs no Go.
func TestOnThisMachinesGPUs(t *testing.T) {
	host, _ := os.Hostname()
	r := Run(context.Background(), Config{
		Lib: nvml.New(), SMI: ExecSMI{}, Workloads: PyTorch{Lifetime: 2 * time.Minute}, Machine: host,
	})
	t.Log("\n" + r.Markdown())
	if path := os.Getenv("GPU_CHECK_REPORT"); path != "" {
		if err := os.WriteFile(path, []byte(r.Markdown()), 0o644); err != nil {
			t.Error(err)
		}
	}
	if n := r.Failures(); n > 0 {
		t.Errorf("%d difference(s) or failed step(s): %s", n, r.Summary())
	}
}
