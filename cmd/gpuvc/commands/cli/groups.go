package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
)

// RequireSubcommands makes every command group under root (a command with
// subcommands and nothing to run itself) print its help when called bare and fail
// with the usual "unknown command" error, with suggestions, when given an unknown
// subcommand. Cobra would otherwise print the help and exit 0 for `gpuvc team foo`,
// which scripts take for success.
func RequireSubcommands(root *cobra.Command) {
	for _, c := range root.Commands() {
		RequireSubcommands(c)
	}
	if root.Parent() == nil || !root.HasSubCommands() || root.Runnable() {
		return
	}
	root.Args = func(cmd *cobra.Command, args []string) error {
		if len(args) == 0 {
			return nil
		}
		msg := fmt.Sprintf("unknown command %q for %q", args[0], cmd.CommandPath())
		if cmd.SuggestionsMinimumDistance <= 0 {
			cmd.SuggestionsMinimumDistance = 2
		}
		if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
			msg += "\n\nDid you mean this?\n\t" + strings.Join(s, "\n\t")
		}
		return fmt.Errorf("%s\nRun '%s --help' for usage", msg, cmd.CommandPath())
	}
	root.RunE = func(cmd *cobra.Command, _ []string) error { return cmd.Help() }
}
