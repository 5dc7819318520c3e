// Package dev implements `gpuvc dev`: tools for developing gpuvc itself, starting
// with a local control plane made of real Kubernetes processes and kwok GPU nodes.
package dev

import (
	"github.com/spf13/cobra"

	"github.com/gpuvc/gpuvc/cmd/gpuvc/commands/cli"
)

// NewCommand returns the dev command group.
func NewCommand(streams cli.Streams, _ *cli.Globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "dev",
		Short: "Developer tools: a local control plane with simulated GPU nodes",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(newClusterCommand(streams), newKindConfigCommand(streams))
	return cmd
}
