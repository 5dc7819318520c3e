// Command gpuvc provisions one virtual cluster per team on a shared GPU host cluster.
// The same binary runs the CLI, the manager, the node agent and reservation pods,
// and answers as `kubectl gpuvc` when installed as kubectl-gpuvc.
package main

import (
	"os"

	"github.com/gpuvc/gpuvc/cmd/gpuvc/commands/cli"
	"github.com/gpuvc/gpuvc/cmd/gpuvc/commands/root"
)

func main() {
	os.Exit(cli.Run(root.AsInvoked(root.NewCommand(cli.StandardStreams()), os.Args[0])))
}
