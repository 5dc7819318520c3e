package team_test

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/gpuvc/gpuvc/cmd/gpuvc/commands/cli"
	"github.com/gpuvc/gpuvc/cmd/gpuvc/commands/root"
	"github.com/gpuvc/gpuvc/e2e/localcp"
	"github.com/gpuvc/gpuvc/e2e/testsupport/managertest"
	"github.com/gpuvc/gpuvc/kind/localcluster"
	"github.com/gpuvc/gpuvc/manager/team"
)

var host *localcluster.ControlPlane

// TestMain starts a real control plane with kwok nodes and the real manager once;
// the commands under test talk to it through a kubeconfig, as a platform engineer
// would.
func TestMain(m *testing.M) {
	os.Exit(localcp.RunTests(m, localcluster.Options{}, func(ctx context.Context, cp *localcluster.ControlPlane) (func(), error) {
		host = cp
		mgr, err := managertest.Start(ctx, cp, team.Options{})
		if err != nil {
			return nil, err
		}
		return func() { _ = mgr.Stop() }, nil
	}))
}

// result is what one gpuvc invocation printed and its exit code.
type result struct {
	out, errOut string
	code        int
}

// gpuvc runs the real command tree in-process against the local control plane.
func gpuvc(t *testing.T, args ...string) result {
	t.Helper()
	if host != nil {
		global := []string{"--kubeconfig", host.Kubeconfig}
		if len(args) > 0 && args[0] == "__complete" { // a shell passes what was typed after it
			global = append([]string{"__complete"}, global...)
			args = args[1:]
		}
		args = append(global, args...)
	}
	return gpuvcAlone(t, args...)
}

// gpuvcAlone runs the command tree with only the given arguments.
func gpuvcAlone(t *testing.T, args ...string) result {
	t.Helper()
	var out, errOut bytes.Buffer
	streams := cli.Streams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}
	cmd := root.NewCommand(streams)
	cmd.SetArgs(args)
	code := cli.Run(cmd)
	return result{out: out.String(), errOut: errOut.String(), code: code}
}

func integration(t *testing.T) context.Context {
	t.Helper()
	return localcp.Context(t, 3*time.Minute)
}
