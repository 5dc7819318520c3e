package team

import (
	"encoding/csv"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	gpuvcv1 "github.com/gpuvc/gpuvc/api/v1alpha1"
	"github.com/gpuvc/gpuvc/cmd/gpuvc/commands/cli"
	"github.com/gpuvc/gpuvc/manager/accounting"
	"github.com/gpuvc/gpuvc/manager/teamctl"
)

// usageKinds are the table's columns, in order; they add up to TOTAL.
var usageKinds = []string{accounting.KindWhole, accounting.KindMIG, accounting.KindFraction, accounting.KindReserved}

func newUsageCommand(streams cli.Streams, globals *cli.Globals) *cobra.Command {
	out := cli.NewOutput("table", "json", "yaml", "csv")
	var since time.Duration
	var namespace string
	cmd := &cobra.Command{
		Use:   "usage",
		Short: "Print GPU-hours per team and pool, by kind (whole, mig, fraction, reserved)",
		Long: "Print the GPU time each team held, in GPU-hours (one whole GPU for one hour), per\n" +
			"pool and kind, as the manager counted it: whole GPUs, MIG slices weighted by compute\n" +
			"slices (1g on an A100 = 1/7), fractions bound to pods and the rest of the GPUs reserved\n" +
			"for fractions. The kinds add up to TOTAL. LOST TO GPU FAILURES is the part of it held by\n" +
			"pods the node agent drained for a failed GPU, from their start to the eviction (kind\n" +
			"lost-to-gpu-failure; not added to TOTAL). --since limits the count to a recent window\n" +
			"(hourly buckets, kept 7 days by default); without it, everything since counting started.\n" +
			"Deleted teams are listed while the manager keeps their ledger (90 days by default,\n" +
			"gpuvc manager --accounting-deleted-team-retention), with when they were deleted.",
		Example: "  gpuvc team usage --since 24h\n  gpuvc team usage -o csv > gpu-hours.csv\n  gpuvc team usage -n my-gpuvc   # gpuvc installed in another namespace",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := out.Validate(); err != nil {
				return err
			}
			if since < 0 {
				return fmt.Errorf("--since %s is negative: give a duration such as 24h", since)
			}
			c, err := connect(globals)
			if err != nil {
				return err
			}
			u, err := c.Usage(cmd.Context(), namespace, since, time.Now())
			if err != nil {
				return err
			}
			switch out.Format {
			case "json", "yaml":
				_, err = out.PrintStructured(streams.Out, u)
				return err
			case "csv":
				return printUsageCSV(streams.Out, u)
			}
			if len(u.Rows) == 0 {
				fmt.Fprintln(streams.ErrOut, "No GPU time counted yet.")
				return nil
			}
			printUsageNotes(streams.ErrOut, u)
			return printUsageTable(streams.Out, u)
		},
	}
	cmd.Flags().DurationVar(&since, "since", 0, "count only the last DURATION (e.g. 24h); 0: everything counted")
	cmd.Flags().StringVarP(&namespace, "namespace", "n", accounting.DefaultNamespace, "the namespace gpuvc runs in, where the manager keeps the ledgers (gpuvc install --namespace)")
	out.AddTo(cmd)
	return cmd
}

// printUsageTable prints one row per team and pool, GPU-hours per kind; DELETED
// is when a deleted team was deleted ("-" for a live one).
func printUsageTable(w io.Writer, u *teamctl.Usage) error {
	type row struct{ team, uid, pool, deleted string }
	var order []row
	hours := map[row]map[string]float64{}
	for _, r := range u.Rows {
		k := row{r.Team, r.TeamUID, r.Pool, "-"}
		if r.Deleted {
			k.deleted = r.DeletedAt.UTC().Format(time.RFC3339)
		}
		if hours[k] == nil {
			hours[k] = map[string]float64{}
			order = append(order, k)
		}
		hours[k][r.Kind] += r.GPUHours
	}
	tw := tabwriter.NewWriter(w, 0, 8, 3, ' ', 0)
	fmt.Fprintln(tw, "TEAM\tPOOL\tWHOLE\tMIG\tFRACTION\tRESERVED\tTOTAL\tLOST TO GPU FAILURES\tDELETED")
	for _, k := range order {
		line, total := k.team+"\t"+k.pool, 0.0
		for _, kind := range usageKinds {
			line += "\t" + strconv.FormatFloat(hours[k][kind], 'f', 2, 64)
			total += hours[k][kind]
		}
		fmt.Fprintf(tw, "%s\t%.2f\t%.2f\t%s\n", line, total, hours[k][accounting.KindLost], k.deleted)
	}
	return tw.Flush()
}

// printUsageNotes says which window the numbers cover and where a team's data
// starts later than it.
func printUsageNotes(w io.Writer, u *teamctl.Usage) {
	if u.From.IsZero() {
		fmt.Fprintf(w, "GPU-hours since counting started, until %s\n", u.To.UTC().Format(time.RFC3339))
	} else {
		fmt.Fprintf(w, "GPU-hours from %s to %s\n", u.From.UTC().Format(time.RFC3339), u.To.UTC().Format(time.RFC3339))
	}
	noted := map[string]bool{}
	for _, r := range u.Rows {
		if !u.From.IsZero() && r.DataFrom.After(u.From) && !noted[r.TeamUID] {
			noted[r.TeamUID] = true
			fmt.Fprintf(w, "note: team %s is counted from %s only\n", r.Team, r.DataFrom.Format(time.RFC3339))
		}
	}
}

// printUsageCSV prints one line per team, pool and kind, for spreadsheets.
func printUsageCSV(w io.Writer, u *teamctl.Usage) error {
	cw := csv.NewWriter(w)
	_ = cw.Write([]string{"team", "pool", "kind", "gpu_hours", "gpu_seconds", "data_from", "sampled_at", "deleted_at"})
	for _, r := range u.Rows {
		deleted := ""
		if r.Deleted {
			deleted = r.DeletedAt.Format(time.RFC3339)
		}
		_ = cw.Write([]string{r.Team, r.Pool, r.Kind, strconv.FormatFloat(r.GPUHours, 'f', 4, 64),
			strconv.FormatFloat(r.GPUSeconds, 'f', 1, 64), r.DataFrom.Format(time.RFC3339), r.SampledAt.Format(time.RFC3339), deleted})
	}
	cw.Flush()
	return cw.Error()
}

// gpuTimeLine summarises status.gpuSeconds for `team get`: GPU-hours in total and
// per kind, and since when.
func gpuTimeLine(g *gpuvcv1.GPUSeconds) string {
	if g == nil {
		return ""
	}
	perKind := map[string]int64{}
	for _, k := range g.ByKind {
		perKind[k.Kind] += k.Seconds
	}
	var parts []string
	for _, kind := range usageKinds {
		if perKind[kind] > 0 {
			parts = append(parts, fmt.Sprintf("%s %.2f", kind, float64(perKind[kind])/3600))
		}
	}
	if lost := perKind[accounting.KindLost]; lost > 0 {
		parts = append(parts, fmt.Sprintf("lost to GPU failures %.2f", float64(lost)/3600))
	}
	line := fmt.Sprintf("%.2f GPU-hours since %s", float64(g.Total)/3600, g.Since.UTC().Format(time.RFC3339))
	if len(parts) > 0 {
		line += " (" + strings.Join(parts, ", ") + ")"
	}
	return line
}
