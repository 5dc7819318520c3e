// Package version implements `gpuvc version`.
package version

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"

	"github.com/gpuvc/gpuvc/cmd/gpuvc/commands/cli"
)

// Set at build time by the Makefile (-ldflags -X).
var (
	Version = "dev"
	Commit  = "unknown"
)

// Info is what `gpuvc version` reports.
type Info struct {
	Version         string `json:"version"`
	Commit          string `json:"commit"`
	GoVersion       string `json:"goVersion"`
	Platform        string `json:"platform"`
	ClientGoVersion string `json:"clientGoVersion"`
}

// Get returns the running binary's version information.
func Get() Info {
	info := Info{
		Version:         Version,
		Commit:          Commit,
		GoVersion:       runtime.Version(),
		Platform:        runtime.GOOS + "/" + runtime.GOARCH,
		ClientGoVersion: "unknown",
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, dep := range bi.Deps {
			if dep.Path == "k8s.io/client-go" {
				info.ClientGoVersion = dep.Version
			}
		}
		if info.Commit == "unknown" {
			for _, s := range bi.Settings {
				if s.Key == "vcs.revision" {
					info.Commit = s.Value
				}
			}
		}
	}
	return info
}

// NewCommand returns the version command.
func NewCommand(streams cli.Streams) *cobra.Command {
	out := cli.NewOutput("text", "json", "yaml")
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print gpuvc's version, commit, Go and client-go versions",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := out.Validate(); err != nil {
				return err
			}
			info := Get()
			if done, err := out.PrintStructured(streams.Out, info); done {
				return err
			}
			_, err := fmt.Fprintf(streams.Out, "gpuvc %s (commit %s, %s, %s, client-go %s)\n",
				info.Version, info.Commit, info.GoVersion, info.Platform, info.ClientGoVersion)
			return err
		},
	}
	out.AddFlag(cmd.Flags())
	return cmd
}
