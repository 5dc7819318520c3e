package localkueue_test

import (
	"context"
	"os"
	"testing"

	"github.com/gpuvc/gpuvc/e2e/localcp"
	"github.com/gpuvc/gpuvc/kind/localcluster"
	"github.com/gpuvc/gpuvc/kind/localkueue"
)

// kueue is the Kueue TestMain started against the package's control plane.
var kueue *localkueue.Kueue

func TestMain(m *testing.M) {
	os.Exit(localcp.RunTests(m, localcluster.Options{}, func(ctx context.Context, cp *localcluster.ControlPlane) (func(), error) {
		k, err := localcp.StartKueue(ctx, cp, os.Stderr)
		if err != nil {
			return nil, err
		}
		kueue = k
		return func() {
			_ = k.Stop()
			if os.Getenv("GPUVC_KUEUE_LOG") != "" {
				b, _ := os.ReadFile(k.LogPath)
				_, _ = os.Stderr.Write(b)
			}
		}, nil
	}))
}
