// Package dev implements `gpuvc dev`: tools for developing and trying gpuvc: a
// local control plane made of real Kubernetes processes and kwok GPU nodes, and the
// kind trial.
package dev

import (
	"github.com/spf13/cobra"

	"github.com/gpuvc/gpuvc/cmd/gpuvc/commands/cli"
	"github.com/gpuvc/gpuvc/kind/trial"
)

// NewCommand returns the dev command group.
func NewCommand(streams cli.Streams, _ *cli.Globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "dev",
		Short: "Developer tools: a local control plane with simulated GPU nodes, the kind trial",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(newClusterCommand(streams), newKindConfigCommand(streams), newTrialCommand(streams, trialEnv{docker: trial.DockerEngine, local: trial.LocalUnavailable}))
	return cmd
}
