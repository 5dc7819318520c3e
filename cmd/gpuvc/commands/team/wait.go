package team

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/gpuvc/gpuvc/cmd/gpuvc/commands/cli"
	"github.com/gpuvc/gpuvc/manager/teamctl"
)

// waitAndReport waits for a team to be Ready, printing each step, and ends with how
// to connect.
func waitAndReport(cmd *cobra.Command, streams cli.Streams, c *teamctl.Client, name string, timeout time.Duration) error {
	t, err := c.WaitReady(cmd.Context(), name, timeout, progressPrinter(streams, name))
	if err != nil {
		return err
	}
	fmt.Fprintf(streams.ErrOut, "team %s is ready in namespace %s; get its kubeconfig with:\n  gpuvc team kubeconfig %s -f %s.kubeconfig\n",
		name, t.Status.Namespace, name, name)
	return nil
}
