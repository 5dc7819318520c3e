package team

import (
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/util/duration"

	"github.com/gpuvc/gpuvc/cmd/gpuvc/commands/cli"
	gpuvcv1 "github.com/gpuvc/gpuvc/manager/api/v1alpha1"
)

func newGetCommand(streams cli.Streams, globals *cli.Globals) *cobra.Command {
	out := cli.NewOutput("text", "yaml", "json")
	cmd := &cobra.Command{
		Use:   "get NAME",
		Short: "Show one team: its spec, conditions, GPU use and kubeconfig",
		Args:  cobra.ExactArgs(1),
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
			return nil
		},
	}
	out.AddFlag(cmd.Flags())
	return cmd
}

// describe prints a team for a person, conditions last as kubectl describe does.
func describe(w io.Writer, t *gpuvcv1.Team, now time.Time) {
	fmt.Fprintf(w, "Name:        %s\n", t.Name)
	fmt.Fprintf(w, "Pool:        %s\n", t.Spec.Pool)
	fmt.Fprintf(w, "Namespace:   %s\n", orDash(t.Status.Namespace))
	fmt.Fprintf(w, "Ready:       %s\n", readyColumn(t))
	fmt.Fprintf(w, "Age:         %s\n", duration.HumanDuration(now.Sub(t.CreationTimestamp.Time)))
	fmt.Fprintf(w, "GPUs:        %s (used/quota)\n", gpuColumn(t))
	fmt.Fprintf(w, "MIG:         %s\n", migColumn(t))
	if t.Spec.MaxGPUsPerPod != nil {
		fmt.Fprintf(w, "Per pod:     at most %d GPUs\n", *t.Spec.MaxGPUsPerPod)
	}
	if s := t.Spec.GPUSharing; s != nil {
		fmt.Fprintf(w, "Sharing:     fractions=%t max-pods-per-shared-gpu=%d whole-gpu-as=%s\n", s.Fractions, s.MaxPodsPerSharedGPU, orDash(s.WholeGPUAs))
	}
	fmt.Fprintf(w, "Members:     %s\n", membersColumn(t))
	if t.Status.KubeconfigSecret != "" {
		fmt.Fprintf(w, "Kubeconfig:  secret %s/%s (gpuvc team kubeconfig %s)\n", t.Status.Namespace, t.Status.KubeconfigSecret, t.Name)
	}
	fmt.Fprintln(w, "Conditions:")
	if len(t.Status.Conditions) == 0 {
		fmt.Fprintln(w, "  (none yet: is the gpuvc manager running?)")
	}
	for _, c := range t.Status.Conditions {
		fmt.Fprintf(w, "  %-20s %-6s %s: %s\n", c.Type, c.Status, c.Reason, c.Message)
	}
}
