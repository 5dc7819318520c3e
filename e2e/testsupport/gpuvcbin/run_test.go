package gpuvcbin

import (
	"context"
	"errors"
	"os/exec"
	"testing"
)

// TestRunSeparatesStreams: stdout, stderr and the exit status come back apart.
func TestRunSeparatesStreams(t *testing.T) {
	out, errOut, err := Run(context.Background(), "sh", "-c", "echo out; echo err >&2; exit 3")
	if out != "out\n" || errOut != "err\n" {
		t.Errorf("stdout %q, stderr %q; want \"out\\n\", \"err\\n\"", out, errOut)
	}
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 3 {
		t.Errorf("err = %v, want exit status 3", err)
	}
}
