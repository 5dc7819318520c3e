package team

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/gpuvc/gpuvc/cmd/gpuvc/commands/cli"
)

func newDeleteCommand(streams cli.Streams, globals *cli.Globals) *cobra.Command {
	w := &waitFlags{}
	cmd := &cobra.Command{
		Use:   "delete NAME [NAME...]",
		Short: "Delete teams: their vCluster, namespace and everything in it (succeeds if already gone)",
		Long: "Delete teams. The manager uninstalls each team's vCluster release and deletes its host\n" +
			"namespace with everything in it (pods, reservation pods, quota, policies, kubeconfig).\n" +
			"Like rm -f, deleting a team that does not exist succeeds.",
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := connect(globals)
			if err != nil {
				return err
			}
			for _, name := range args {
				existed, err := c.Delete(cmd.Context(), name)
				if err != nil {
					return err
				}
				if !existed {
					fmt.Fprintf(streams.Out, "team/%s not found (nothing to delete)\n", name)
					continue
				}
				fmt.Fprintf(streams.Out, "team/%s deleted\n", name)
			}
			if !w.wait {
				return nil
			}
			for _, name := range args {
				if err := c.WaitDeleted(cmd.Context(), name, w.timeout, progressPrinter(streams, name)); err != nil {
					return err
				}
				fmt.Fprintf(streams.ErrOut, "team %s and its host objects are gone\n", name)
			}
			return nil
		},
	}
	w.add(cmd, "each team and its host objects are gone")
	return cmd
}
