package team

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/gpuvc/gpuvc/cmd/gpuvc/commands/cli"
)

func newGetCommand(streams cli.Streams, globals *cli.Globals) *cobra.Command {
	out := cli.NewOutput("text", "yaml", "json")
	cmd := &cobra.Command{
		Use:   "get NAME",
		Short: "Show one team: its spec, conditions, GPU use and kubeconfig",
		Long: "Show one team: pool, quota and use, sharing, pod security, network, members, host\n" +
			"namespace, conditions with their reasons, and how to get its kubeconfig. -o yaml|json\n" +
			"prints a manifest `gpuvc team apply -f` takes back.",
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: teamNames(globals, 1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := out.Validate(); err != nil {
				return err
			}
			c, err := connect(globals)
			if err != nil {
				return err
			}
			t, err := c.Get(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			if done, err := out.PrintStructured(streams.Out, printable(t)); done {
				return err
			}
			describe(streams.Out, t, time.Now())
			// What in the pool cannot serve the team today: no nodes, missing
			// MIG profiles, GPU nodes fenced for their container runtime.
			for _, w := range c.PoolWarnings(cmd.Context(), t) {
				fmt.Fprintf(streams.ErrOut, "warning: team %s: %s\n", t.Name, w)
			}
			return nil
		},
	}
	out.AddTo(cmd)
	return cmd
}
