package install_test

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/gpuvc/gpuvc/cmd/gpuvc/commands/cli"
	"github.com/gpuvc/gpuvc/cmd/gpuvc/commands/root"
	"github.com/gpuvc/gpuvc/e2e/localcp"
	"github.com/gpuvc/gpuvc/kind/localcluster"
)

// TestMain starts one real control plane (etcd, kube-apiserver, controller-manager,
// scheduler, kwok GPU nodes) for the integration test; none under -short.
func TestMain(m *testing.M) {
	os.Exit(localcp.RunTests(m, localcluster.Options{}, nil))
}

// result is what one gpuvc invocation printed and its exit code.
type result struct {
	out, errOut string
	code        int
}

// gpuvc runs the real command tree in-process, as a platform engineer would run it.
func gpuvc(t *testing.T, args ...string) result {
	t.Helper()
	var out, errOut bytes.Buffer
	cmd := root.NewCommand(cli.Streams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut})
	cmd.SetArgs(args)
	code := cli.Run(cmd)
	t.Logf("gpuvc %s → %d\n%s%s", strings.Join(args, " "), code, errOut.String(), head(out.String(), 20))
	return result{out: out.String(), errOut: errOut.String(), code: code}
}

func head(s string, lines int) string {
	parts := strings.SplitAfterN(s, "\n", lines+1)
	if len(parts) > lines {
		return strings.Join(parts[:lines], "") + "...\n"
	}
	return s
}
