package vclusters_test

import (
	"os"
	"testing"

	"github.com/gpuvc/gpuvc/e2e/localcp"
)

func TestMain(m *testing.M) {
	os.Exit(localcp.RunTests(m, localcp.Options{}, nil))
}
