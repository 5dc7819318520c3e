package root

import (
	"bytes"
	"strings"
	"testing"

	"github.com/gpuvc/gpuvc/cmd/gpuvc/commands/cli"
)

// help runs `<argv0> args... --help` and returns what it printed.
func help(t *testing.T, argv0 string, args ...string) string {
	t.Helper()
	var out bytes.Buffer
	cmd := AsInvoked(NewCommand(cli.Streams{In: strings.NewReader(""), Out: &out, ErrOut: &out}), argv0)
	cmd.SetArgs(append(args, "--help"))
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	return out.String()
}

// Run as kubectl-gpuvc, the usage lines say what the user types.
func TestKubectlPluginNamesItself(t *testing.T) {
	got := help(t, "/home/me/.krew/bin/kubectl-gpuvc", "team", "create")
	if !strings.Contains(got, "kubectl gpuvc team create NAME") {
		t.Errorf("as a kubectl plugin, team create's usage:\n%s", got)
	}
	if got := help(t, "/usr/local/bin/gpuvc", "team", "create"); !strings.Contains(got, "gpuvc team create NAME") || strings.Contains(got, "kubectl gpuvc") {
		t.Errorf("as gpuvc, team create's usage:\n%s", got)
	}
}
