package dev

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/gpuvc/gpuvc/cmd/gpuvc/commands/cli"
	"github.com/gpuvc/gpuvc/cmd/gpuvc/commands/version"
	"github.com/gpuvc/gpuvc/kind/localcluster"
	"github.com/gpuvc/gpuvc/kind/trial"
)

// exitNoDocker is the exit code of a trial command refused for lack of a Docker
// engine (as `make trial` exited before the trial existed).
const exitNoDocker = 2

type trialFlags struct {
	name, dir     string
	image         string
	nodeImage     string
	workloadImage string
	timeout       time.Duration
}

func (f *trialFlags) options(streams cli.Streams, docker trial.DockerCheck) trial.Options {
	return trial.Options{
		Name: f.name, Dir: f.dir, Image: f.image, NodeImage: f.nodeImage, WorkloadImage: f.workloadImage,
		Timeout: f.timeout, Log: streams.ErrOut, Docker: docker,
	}
}

// newTrialCommand returns `gpuvc dev trial`; docker decides whether a Docker
// engine answers (trial.DockerEngine outside tests).
func newTrialCommand(streams cli.Streams, docker trial.DockerCheck) *cobra.Command {
	f := &trialFlags{}
	cmd := &cobra.Command{
		Use:   "trial",
		Short: "The kind trial: kind cluster with simulated GPU nodes, gpuvc installed, two teams running GPU pods (needs a Docker engine)",
		Long: "The kind trial (`make trial`, docs/trial.md): a kind cluster whose workers are labelled, tainted\n" +
			"and named like gpuvc's node pools, with GPUs simulated by gpuvc's agent and device plugin, gpuvc\n" +
			"installed from its chart, and two teams running GPU pods in their own virtual clusters.\n" +
			"Every subcommand but down refuses at once where no Docker engine answers.",
		Args: cobra.NoArgs,
	}
	cmd.PersistentFlags().StringVar(&f.name, "name", trial.DefaultName, "name of the kind cluster")
	cmd.PersistentFlags().StringVar(&f.dir, "dir", filepath.Join(localcluster.CacheDir(), "trial"),
		"folder for the host and team kubeconfigs")
	up := &cobra.Command{
		Use:   "up",
		Short: "Create (or reuse) the kind cluster, load the gpuvc image, install gpuvc, create two teams and run GPU pods",
		Long: "Create the kind cluster (or reuse the one of that name), load the gpuvc image into its nodes\n" +
			"(saved from the local Docker engine: build it first with `make image`), install gpuvc with\n" +
			"simulated GPUs, create the teams vision (pool a100) and llm (pool h100), run a whole-GPU,\n" +
			"a MIG (vision) and a fractional pod in each team's virtual cluster through the team's own\n" +
			"kubeconfig, and print where they landed and how to connect. Running it again keeps what\n" +
			"exists. kind pulls its node image, and the nodes pull vCluster's and the demo pods' images,\n" +
			"from public registries.",
		Example: "  make trial                                        # builds bin/gpuvc and the image, then runs this\n" +
			"  gpuvc dev trial up --image ghcr.io/gpuvc/gpuvc:dev",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			// Ctrl-C ends the waits cleanly; what exists stays for the next run or for down.
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			res, err := trial.Up(ctx, f.options(streams, docker))
			if res != nil && len(res.Teams) > 0 && err == nil {
				res.Print(streams.Out, selfName())
			}
			return refusal(err)
		},
	}
	up.Flags().StringVar(&f.image, "image", "ghcr.io/gpuvc/gpuvc:"+version.Version, "gpuvc image (repository:tag, not latest) in the local Docker engine, loaded into every node")
	up.Flags().StringVar(&f.nodeImage, "node-image", "", "kind node image (default: kind's own for its release)")
	up.Flags().StringVar(&f.workloadImage, "workload-image", trial.DefaultWorkloadImage, "image of the demo pods (needs sh and sleep)")
	up.Flags().DurationVar(&f.timeout, "timeout", 10*time.Minute, "how long each wait may take (nodes, install, each team, each pod)")
	cmd.AddCommand(
		up,
		&cobra.Command{
			Use:   "down",
			Short: "Delete the kind cluster and the kubeconfigs up wrote (succeeds if there is none, like rm -f)",
			Args:  cobra.NoArgs,
			RunE: func(cmd *cobra.Command, _ []string) error {
				return trial.Down(cmd.Context(), f.options(streams, docker))
			},
		},
		&cobra.Command{
			Use:   "check",
			Short: "Check that the trial can run here (a Docker engine answers); otherwise say what to use instead",
			Args:  cobra.NoArgs,
			RunE: func(cmd *cobra.Command, _ []string) error {
				if err := trial.RequireDocker(cmd.Context(), docker); err != nil {
					return refusal(err)
				}
				_, err := fmt.Fprintln(streams.ErrOut, "a Docker engine answers: the kind trial can run here")
				return err
			},
		},
	)
	return cmd
}

// refusal gives the no-Docker refusal its own exit code.
func refusal(err error) error {
	if errors.Is(err, trial.ErrNoDocker) {
		return &cli.ExitError{Code: exitNoDocker, Err: err}
	}
	return err
}

// selfName is how the user ran this binary, for the commands the trial prints:
// a relative path such as bin/gpuvc as given, anything else as "gpuvc".
func selfName() string {
	if a := os.Args[0]; !filepath.IsAbs(a) && strings.Contains(a, "/") {
		return a
	}
	return "gpuvc"
}
