package cli

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"
)

// ExitError carries a specific exit code out of a command; any other error exits 1.
type ExitError struct {
	Code int
	Err  error
}

func (e *ExitError) Error() string { return e.Err.Error() }
func (e *ExitError) Unwrap() error { return e.Err }

// Run executes the command and turns its outcome into a process exit code, printing
// the error once (cobra's own error printing is silenced by the root command).
func Run(cmd *cobra.Command) int {
	err := cmd.Execute()
	if err == nil {
		return 0
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "error: %v\n", err)
	var exit *ExitError
	if errors.As(err, &exit) {
		return exit.Code
	}
	return 1
}
