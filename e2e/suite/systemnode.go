package suite

import (
	"context"
	"os/exec"
)

// SystemNodeCommand runs on this machine (the kwok nodes have no network of their own).
func (b *localBackend) SystemNodeCommand(ctx context.Context, name string, args ...string) (*exec.Cmd, error) {
	return exec.CommandContext(ctx, name, args...), nil
}
