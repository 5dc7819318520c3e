package team

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/gpuvc/gpuvc/api/contract"
	gpuvcv1 "github.com/gpuvc/gpuvc/api/v1alpha1"
	"github.com/gpuvc/gpuvc/cmd/gpuvc/commands/cli"
	"github.com/gpuvc/gpuvc/manager/teamctl"
)

func newSleepCommand(streams cli.Streams, globals *cli.Globals) *cobra.Command {
	w := &waitFlags{}
	cmd := &cobra.Command{
		Use:   "sleep NAME",
		Short: "Put a team's vCluster to sleep now (its control plane scaled to zero until the next connection)",
		Long: "Put a team's vCluster to sleep now instead of after spec.idle.vcluster.sleepAfter. The\n" +
			"manager refuses (an event on the Team) while team pods run on the host. The team's next\n" +
			"request through its kubeconfig wakes it; it is slower, not refused.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return request(cmd.Context(), streams, globals, args[0], contract.IdleRequestSleep, w, (*teamctl.Client).WaitAsleep)
		},
	}
	w.add(cmd, "the vCluster is asleep")
	return cmd
}

func newWakeCommand(streams cli.Streams, globals *cli.Globals) *cobra.Command {
	w := &waitFlags{}
	cmd := &cobra.Command{
		Use:   "wake NAME",
		Short: "Wake a team's sleeping vCluster now (succeeds if it is awake)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return request(cmd.Context(), streams, globals, args[0], contract.IdleRequestWake, w, (*teamctl.Client).WaitAwake)
		},
	}
	w.add(cmd, "the vCluster is awake")
	return cmd
}

type waitFunc func(*teamctl.Client, context.Context, string, time.Duration, teamctl.Progress) (*gpuvcv1.Team, error)

func request(ctx context.Context, streams cli.Streams, globals *cli.Globals, name, what string, w *waitFlags, wait waitFunc) error {
	c, err := connect(globals)
	if err != nil {
		return err
	}
	if err := c.RequestIdle(ctx, name, what); err != nil {
		return err
	}
	fmt.Fprintf(streams.Out, "team/%s %s requested\n", name, what)
	if !w.wait {
		return nil
	}
	t, err := wait(c, ctx, name, w.timeout, progressPrinter(streams, name))
	if err != nil {
		return err
	}
	fmt.Fprintf(streams.ErrOut, "team %s: %s\n", name, idleLine(t, time.Now()))
	return nil
}
