package dev

import (
	"github.com/spf13/cobra"

	"github.com/gpuvc/gpuvc/cmd/gpuvc/commands/cli"
	"github.com/gpuvc/gpuvc/kind/nodepool"
	"github.com/gpuvc/gpuvc/kind/trial"
)

func newKindConfigCommand(streams cli.Streams) *cobra.Command {
	return &cobra.Command{
		Use:   "kind-config",
		Short: "Print a kind cluster config whose workers are labelled and tainted like gpuvc's simulated GPU pools",
		Long: "Print a kind cluster config whose workers are labelled and tainted like gpuvc's simulated\n" +
			"GPU pools (system, a100 with a MIG node, h100). GPU capacity comes from the simulated device\n" +
			"plugin once gpuvc's chart runs there. Use it with: kind create cluster --config FILE",
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			cfg, err := trial.ClusterConfig(nodepool.Default())
			if err != nil {
				return err
			}
			b, err := trial.YAML(cfg)
			if err != nil {
				return err
			}
			_, err = streams.Out.Write(b)
			return err
		},
	}
}
