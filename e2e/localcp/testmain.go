package localcp

import (
	"context"
	"flag"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/gpuvc/gpuvc/e2e/testsupport/poll"
	"github.com/gpuvc/gpuvc/kind/localcluster"
)

// shared is the control plane RunTests started for the running test package.
var shared *localcluster.ControlPlane

// ForTest returns the control plane RunTests started for this test package; the
// test is skipped under -short, where none runs.
func ForTest(t testing.TB) *localcluster.ControlPlane {
	t.Helper()
	if testing.Short() || shared == nil {
		t.Skip("integration test: needs the local control plane (run without -short)")
	}
	return shared
}

// Context is an integration test's context: the test is skipped as ForTest
// skips it, and the context ends after timeout or at the test's cleanup.
func Context(t testing.TB, timeout time.Duration) context.Context {
	t.Helper()
	ForTest(t)
	return poll.Context(t, timeout)
}

// RunTests is a test package's TestMain body: it starts one control plane for the
// package (none under -short, where integration tests skip themselves), runs
// setup on it (install CRDs, start a manager...; nil for none), runs the
// tests, then the teardown setup returned, then stops the control plane. A
// component still running after Stop fails the run. It returns the exit code.
func RunTests(m *testing.M, opts localcluster.Options, setup func(ctx context.Context, cp *localcluster.ControlPlane) (teardown func(), err error)) int {
	flag.Parse()
	if testing.Short() {
		return m.Run()
	}
	if opts.Log == nil {
		opts.Log = os.Stderr
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	cp, err := Start(ctx, opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, "starting the local control plane:", err)
		return 1
	}
	shared = cp
	defer func() { shared = nil }()
	pids := cp.PIDs()
	code := func() int {
		if setup == nil {
			return m.Run()
		}
		teardown, err := setup(ctx, cp)
		if err != nil {
			fmt.Fprintln(os.Stderr, "setting up the tests:", err)
			return 1
		}
		if teardown != nil {
			defer teardown()
		}
		return m.Run()
	}()
	if err := cp.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "stopping the local control plane:", err)
		code = 1
	}
	for name, pid := range pids {
		if localcluster.Alive(pid) {
			fmt.Fprintf(os.Stderr, "%s (pid %d) still running after Stop\n", name, pid)
			code = 1
		}
	}
	return code
}

// Start builds (once, cached) the control-plane binaries unless opts names some,
// then starts a control plane (localcluster.Start): tests need no `make binaries`
// first.
func Start(ctx context.Context, opts localcluster.Options) (*localcluster.ControlPlane, error) {
	if opts.Binaries == nil {
		b, err := EnsureBinaries(ctx, opts.Log)
		if err != nil {
			return nil, err
		}
		opts.Binaries = b
	}
	return localcluster.Start(ctx, opts)
}
