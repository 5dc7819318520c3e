// Package root assembles the gpuvc command tree.
package root

import (
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gpuvc/gpuvc/cmd/gpuvc/commands/agent"
	"github.com/gpuvc/gpuvc/cmd/gpuvc/commands/cli"
	"github.com/gpuvc/gpuvc/cmd/gpuvc/commands/dev"
	"github.com/gpuvc/gpuvc/cmd/gpuvc/commands/install"
	"github.com/gpuvc/gpuvc/cmd/gpuvc/commands/manager"
	"github.com/gpuvc/gpuvc/cmd/gpuvc/commands/reserve"
	"github.com/gpuvc/gpuvc/cmd/gpuvc/commands/team"
	"github.com/gpuvc/gpuvc/cmd/gpuvc/commands/uninstall"
	"github.com/gpuvc/gpuvc/cmd/gpuvc/commands/version"
)

// NewCommand returns the gpuvc root command with every subcommand attached.
func NewCommand(streams cli.Streams) *cobra.Command {
	globals := &cli.Globals{}
	cmd := &cobra.Command{
		Use:   "gpuvc",
		Short: "Give every team its own Kubernetes cluster on one shared GPU host cluster",
		Long: "gpuvc provisions one virtual cluster (vCluster) per team on a shared host cluster and\n" +
			"maps the team's GPU, MIG and fractional GPU requests onto the host inside the team's\n" +
			"quota and node pool.",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	cmd.SetIn(streams.In)
	cmd.SetOut(streams.Out)
	cmd.SetErr(streams.ErrOut)
	globals.AddFlags(cmd.PersistentFlags())
	cmd.AddCommand(
		version.NewCommand(streams),
		dev.NewCommand(streams, globals),
		agent.NewCommand(streams, globals),
		reserve.NewCommand(streams, globals),
		manager.NewCommand(streams, globals),
		team.NewCommand(streams, globals),
		install.NewCommand(streams, globals), uninstall.NewCommand(streams, globals),
	)
	cli.RequireSubcommands(cmd)
	return cmd
}

// KubectlPluginName is the file name under which kubectl runs the binary as
// `kubectl gpuvc` (kubectl's plugin convention, as krew installs plugins: an
// executable kubectl-<name> on PATH; `make build` links bin/kubectl-gpuvc).
const KubectlPluginName = "kubectl-gpuvc"

// AsInvoked names cmd as the user typed it: run as kubectl-gpuvc, usage lines
// and help say "kubectl gpuvc ...".
func AsInvoked(cmd *cobra.Command, argv0 string) *cobra.Command {
	if strings.TrimSuffix(filepath.Base(argv0), ".exe") != KubectlPluginName {
		return cmd
	}
	if cmd.Annotations == nil {
		cmd.Annotations = map[string]string{}
	}
	cmd.Annotations[cobra.CommandDisplayNameAnnotation] = "kubectl gpuvc"
	return cmd
}
