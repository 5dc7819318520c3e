// Package team implements `gpuvc team`: create, apply, list, get, delete teams and
// fetch a team's kubeconfig on the host cluster.
package team

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuvc/gpuvc/cmd/gpuvc/commands/cli"
	"github.com/gpuvc/gpuvc/manager/teamctl"
)

// NewCommand returns the team command group.
func NewCommand(streams cli.Streams, globals *cli.Globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "team",
		Aliases: []string{"teams"},
		Short:   "Create, change, list and delete team clusters on the host",
	}
	cmd.AddCommand(
		withPoolCompletion(newCreateCommand(streams, globals), globals),
		newApplyCommand(streams, globals),
		newListCommand(streams, globals),
		newGetCommand(streams, globals),
		withTeamNames(newDeleteCommand(streams, globals), globals, 0),
		withTeamNames(newKubeconfigCommand(streams, globals), globals, 1),
		newUsageCommand(streams, globals),
		withTeamNames(newSleepCommand(streams, globals), globals, 1),
		withTeamNames(newWakeCommand(streams, globals), globals, 1),
	)
	return cmd
}

func connect(globals *cli.Globals) (*teamctl.Client, error) {
	cfg, err := globals.RESTConfig()
	if err != nil {
		return nil, err
	}
	return teamctl.New(cfg)
}

// waitFlags are shared by commands that can wait.
type waitFlags struct {
	wait    bool
	timeout time.Duration
}

func (w *waitFlags) add(cmd *cobra.Command, what string) {
	cmd.Flags().BoolVar(&w.wait, "wait", false, "wait until "+what+", printing progress")
	cmd.Flags().DurationVar(&w.timeout, "timeout", 5*time.Minute, "how long --wait waits")
}

// progressPrinter prints each condition change, heartbeat and warning to ErrOut
// while waiting.
func progressPrinter(streams cli.Streams, name string) teamctl.Progress {
	return func(e teamctl.Event) {
		if c := e.Condition; c != nil {
			mark := "…"
			if c.Status == metav1.ConditionTrue {
				mark = "✓"
			}
			fmt.Fprintf(streams.ErrOut, "[%5.1fs] %s %s %s: %s (%s)\n", e.Elapsed.Seconds(), name, mark, c.Type, c.Reason, c.Message)
			return
		}
		fmt.Fprintf(streams.ErrOut, "[%5.1fs] %s %s\n", e.Elapsed.Seconds(), name, e.Note)
	}
}
