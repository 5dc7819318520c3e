package localcp_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/gpuvc/gpuvc/e2e/localcp"
	"github.com/gpuvc/gpuvc/e2e/testsupport/poll"
	"github.com/gpuvc/gpuvc/kind/localcluster"
)

func TestMain(m *testing.M) {
	if os.Getenv(panicHelperEnv) != "" { // the re-exec'd helper starts its own plane
		os.Exit(m.Run())
	}
	os.Exit(localcp.RunTests(m, localcluster.Options{}, nil))
}

func testContext(t *testing.T) context.Context {
	return poll.Context(t, 2*time.Minute)
}
