package team

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/util/duration"

	gpuvcv1 "github.com/gpuvc/gpuvc/api/v1alpha1"
	"github.com/gpuvc/gpuvc/cmd/gpuvc/commands/cli"
)

func newListCommand(streams cli.Streams, globals *cli.Globals) *cobra.Command {
	out := cli.NewOutput("table", "wide", "yaml", "json")
	cmd := &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List teams with their pool, GPU quota and use, and readiness",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := out.Validate(); err != nil {
				return err
			}
			c, err := connect(globals)
			if err != nil {
				return err
			}
			list, err := c.List(cmd.Context())
			if err != nil {
				return err
			}
			if done, err := out.PrintStructured(streams.Out, printableList(list)); done {
				return err
			}
			if len(list.Items) == 0 {
				fmt.Fprintln(streams.ErrOut, "No teams. Create one with `gpuvc team create NAME --pool POOL`.")
				return nil
			}
			return printTable(streams.Out, list.Items, out.Format == "wide", time.Now())
		},
	}
	out.AddTo(cmd)
	return cmd
}

// printTable prints teams as kubectl prints resources: aligned columns, ages.
func printTable(w io.Writer, teams []gpuvcv1.Team, wide bool, now time.Time) error {
	sort.Slice(teams, func(i, j int) bool { return teams[i].Name < teams[j].Name })
	tw := tabwriter.NewWriter(w, 0, 8, 3, ' ', 0)
	header := "NAME\tPOOL\tGPUS\tMIG\tREADY\tAGE"
	if wide {
		header += "\tNAMESPACE\tREASON\tMEMBERS"
	}
	fmt.Fprintln(tw, header)
	for i := range teams {
		t := &teams[i]
		row := fmt.Sprintf("%s\t%s\t%s\t%s\t%s\t%s", t.Name, t.Spec.Pool, gpuColumn(t), migColumn(t), readyColumn(t),
			duration.HumanDuration(now.Sub(t.CreationTimestamp.Time)))
		if wide {
			reason := "-"
			if r := apimeta.FindStatusCondition(t.Status.Conditions, gpuvcv1.ConditionReady); r != nil {
				reason = r.Reason
			}
			row += fmt.Sprintf("\t%s\t%s\t%s", orDash(t.Status.Namespace), reason, membersColumn(t))
		}
		fmt.Fprintln(tw, row)
	}
	return tw.Flush()
}

// gpuColumn is "used/quota" whole GPUs, "-" without a quota.
func gpuColumn(t *gpuvcv1.Team) string {
	if t.Spec.Quota.GPUs == nil {
		return "-"
	}
	var used int64
	if t.Status.GPUUsage != nil {
		used = t.Status.GPUUsage.GPUs
	}
	return fmt.Sprintf("%d/%d", used, *t.Spec.Quota.GPUs)
}

// migColumn lists "profile used/quota" per MIG profile.
func migColumn(t *gpuvcv1.Team) string {
	if len(t.Spec.Quota.MIG) == 0 {
		return "-"
	}
	var parts []string
	for profile, quota := range t.Spec.Quota.MIG {
		var used int64
		if t.Status.GPUUsage != nil {
			used = t.Status.GPUUsage.MIG[profile]
		}
		parts = append(parts, fmt.Sprintf("%s %d/%d", profile, used, quota))
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
}

func readyColumn(t *gpuvcv1.Team) string {
	if !t.DeletionTimestamp.IsZero() {
		return "Deleting"
	}
	r := apimeta.FindStatusCondition(t.Status.Conditions, gpuvcv1.ConditionReady)
	if r == nil {
		return "Unknown"
	}
	return string(r.Status)
}

func membersColumn(t *gpuvcv1.Team) string {
	if len(t.Spec.Members) == 0 {
		return "-"
	}
	var m []string
	for _, x := range t.Spec.Members {
		m = append(m, x.Kind+":"+x.Name)
	}
	return strings.Join(m, ",")
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
