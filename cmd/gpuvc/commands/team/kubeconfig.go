package team

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/gpuvc/gpuvc/cmd/gpuvc/commands/cli"
)

func newKubeconfigCommand(streams cli.Streams, globals *cli.Globals) *cobra.Command {
	var file, server string
	cmd := &cobra.Command{
		Use:   "kubeconfig NAME [-f FILE]",
		Short: "Print or write the kubeconfig of a team's virtual cluster",
		Example: "  gpuvc team kubeconfig fraud -f fraud.kubeconfig\n" +
			"  kubectl --kubeconfig fraud.kubeconfig get namespaces",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := connect(globals)
			if err != nil {
				return err
			}
			data, err := c.Kubeconfig(cmd.Context(), args[0], server)
			if err != nil {
				return err
			}
			if file == "" {
				_, err = streams.Out.Write(data)
				return err
			}
			// Owner-only: it grants admin on the team's virtual cluster.
			if err := os.WriteFile(file, data, 0o600); err != nil {
				return err
			}
			fmt.Fprintf(streams.ErrOut, "wrote %s; use it with: kubectl --kubeconfig %s get namespaces\n", file, file)
			return nil
		},
	}
	cmd.Flags().StringVarP(&file, "file", "f", "", "write to FILE (mode 0600) instead of standard output")
	cmd.Flags().StringVar(&server, "server", "", "replace the API server URL, e.g. a port-forward: https://127.0.0.1:8443")
	return cmd
}
