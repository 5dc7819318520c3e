// Command gpuvc provisions one virtual cluster per team on a shared GPU host cluster.
// The same binary runs the CLI, the manager, the node agent and reservation pods.
package main

import (
	"os"

	"github.com/gpuvc/gpuvc/cmd/gpuvc/commands/cli"
	"github.com/gpuvc/gpuvc/cmd/gpuvc/commands/root"
)

func main() {
	os.Exit(cli.Run(root.NewCommand(cli.StandardStreams())))
}
