package localcp_test

import (
	"os"
	"testing"

	"github.com/gpuvc/gpuvc/e2e/localcp"
	"github.com/gpuvc/gpuvc/kind/localcluster"
)

func TestMain(m *testing.M) {
	if os.Getenv(panicHelperEnv) != "" { // the re-exec'd helper starts its own plane
		os.Exit(m.Run())
	}
	os.Exit(localcp.RunTests(m, localcluster.Options{}, nil))
}
