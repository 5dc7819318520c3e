package vclusters_test

import (
	"os"
	"testing"

	"github.com/gpuvc/gpuvc/e2e/localcp"
	"github.com/gpuvc/gpuvc/kind/localcluster"
)

func TestMain(m *testing.M) {
	os.Exit(localcp.RunTests(m, localcluster.Options{}, nil))
}
