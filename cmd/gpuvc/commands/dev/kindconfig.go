package dev

import (
	"github.com/spf13/cobra"

	"github.com/gpuvc/gpuvc/cmd/gpuvc/commands/cli"
	"github.com/gpuvc/gpuvc/kind/trial"
)

func newKindConfigCommand(streams cli.Streams) *cobra.Command {
	return &cobra.Command{
		Use:   "kind-config",
		Short: "Print the kind trial's cluster config: workers labelled, tainted and named like gpuvc's simulated GPU pools",
		Long: "Print the kind cluster config of the trial (`gpuvc dev trial up` creates it through kind's Go\n" +
			"library): workers labelled, tainted and named like the trial's pools (system-0, a100-0 with\n" +
			"whole and MIG GPUs, h100-0). GPU capacity comes from the simulated device plugin once gpuvc's\n" +
			"chart runs there (agent.simulate, agent.devicePlugin). Use it with: kind create cluster --config FILE",
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			cfg, err := trial.ClusterConfig(trial.Pools())
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
