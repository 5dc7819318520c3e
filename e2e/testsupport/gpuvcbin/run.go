package gpuvcbin

import (
	"bytes"
	"context"
	"os/exec"
)

// Run runs bin with args, as a user at a shell would, and returns what it
// wrote to stdout and stderr.
func Run(ctx context.Context, bin string, args ...string) (stdout, stderr string, err error) {
	var out, errOut bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	return out.String(), errOut.String(), err
}
