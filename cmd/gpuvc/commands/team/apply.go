package team

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/gpuvc/gpuvc/cmd/gpuvc/commands/cli"
	"github.com/gpuvc/gpuvc/manager/teamctl"
)

type applyFlags struct {
	files     []string
	recursive bool
	dryRun    dryRunFlag
	waitFlags
}

func newApplyCommand(streams cli.Streams, globals *cli.Globals) *cobra.Command {
	f := &applyFlags{}
	cmd := &cobra.Command{
		Use:   "apply -f FILE|DIR [-f ...]",
		Short: "Create or update teams from YAML or JSON files (server-side apply)",
		Long: "Create or update teams from YAML or JSON files (server-side apply). A folder applies every\n" +
			"*.yaml, *.yml and *.json file in it (and in its subfolders with -R); a file may hold several\n" +
			"Team documents, or a TeamList. Every file is checked first: if any document is not a valid\n" +
			"Team, every problem is listed and nothing is applied. Then every team is attempted; the\n" +
			"command fails if any of them failed.",
		Example: "  gpuvc team apply -f teams/\n  gpuvc team apply -R -f teams/\n  gpuvc team apply -f fraud.yaml --wait",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := f.dryRun.validate(); err != nil {
				return err
			}
			teams, skipped, err := teamctl.ReadTeams(f.files, f.recursive, streams.In)
			for _, dir := range skipped {
				fmt.Fprintf(streams.ErrOut, "skipped subfolder %s (use -R)\n", dir)
			}
			if err != nil {
				return fmt.Errorf("%w; nothing was applied", err)
			}
			if f.dryRun.mode == dryRunClient {
				for _, t := range teams {
					fmt.Fprintf(streams.Out, "team/%s valid%s\n", t.Name, f.dryRun.suffix())
				}
				return nil
			}
			c, err := connect(globals)
			if err != nil {
				return err
			}
			var failed []error
			for _, t := range teams {
				res, err := c.Apply(cmd.Context(), t, f.dryRun.options()...)
				if err != nil {
					fmt.Fprintf(streams.ErrOut, "team/%s: %v\n", t.Name, err)
					failed = append(failed, fmt.Errorf("team/%s", t.Name))
					continue
				}
				fmt.Fprintf(streams.Out, "team/%s %s%s\n", t.Name, res, f.dryRun.suffix())
				for _, w := range c.PoolWarnings(cmd.Context(), t) {
					fmt.Fprintf(streams.ErrOut, "warning: team %s: %s\n", t.Name, w)
				}
			}
			if len(failed) > 0 {
				return fmt.Errorf("%d of %d teams failed: %w", len(failed), len(teams), errors.Join(failed...))
			}
			if f.wait && f.dryRun.mode == dryRunNone {
				for _, t := range teams {
					if err := waitAndReport(cmd, streams, c, t.Name, f.timeout); err != nil {
						return err
					}
				}
			}
			return nil
		},
	}
	cmd.Flags().StringArrayVarP(&f.files, "filename", "f", nil, `file or folder of Team manifests ("-" reads standard input)`)
	cmd.Flags().BoolVarP(&f.recursive, "recursive", "R", false, "also read the subfolders of folders given with -f")
	f.dryRun.add(cmd, "check the teams without changing anything")
	f.waitFlags.add(cmd, "every applied team is Ready")
	_ = cmd.MarkFlagRequired("filename")
	_ = cmd.MarkFlagFilename("filename", "yaml", "yml", "json")
	return cmd
}
