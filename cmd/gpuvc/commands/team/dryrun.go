package team

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/gpuvc/gpuvc/manager/teamctl"
)

// Values of --dry-run, as kubectl's.
const (
	dryRunNone   = "none"
	dryRunClient = "client"
	dryRunServer = "server"
)

// dryRunFlag is --dry-run[=server|client]: a bare --dry-run asks the API server,
// which applies every rule, default and admission check without storing anything;
// client checks the same Team rules here, with no cluster needed.
type dryRunFlag struct{ mode string }

func (d *dryRunFlag) add(cmd *cobra.Command, what string) {
	cmd.Flags().StringVar(&d.mode, "dry-run", dryRunNone, what+": server (a bare --dry-run) asks the API server,\n"+
		"which applies every rule and default; client checks the same rules here, with no cluster needed")
	cmd.Flags().Lookup("dry-run").NoOptDefVal = dryRunServer
}

func (d *dryRunFlag) validate() error {
	switch d.mode {
	case dryRunNone, dryRunClient, dryRunServer:
		return nil
	}
	return fmt.Errorf("--dry-run %q is not supported: use --dry-run (the API server checks it), --dry-run=client (checked here) or leave it out", d.mode)
}

// options are the teamctl write options of the mode.
func (d *dryRunFlag) options() []teamctl.WriteOption {
	if d.mode == dryRunServer {
		return []teamctl.WriteOption{teamctl.DryRun}
	}
	return nil
}

// suffix marks what a dry run printed as not done.
func (d *dryRunFlag) suffix() string {
	if d.mode == dryRunNone {
		return ""
	}
	return " (" + d.mode + " dry run)"
}
