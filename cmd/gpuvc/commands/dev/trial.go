package dev

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/gpuvc/gpuvc/charts/installer"
	"github.com/gpuvc/gpuvc/cmd/gpuvc/commands/cli"
	"github.com/gpuvc/gpuvc/cmd/gpuvc/commands/version"
	"github.com/gpuvc/gpuvc/kind/localcluster"
	"github.com/gpuvc/gpuvc/kind/trial"
)

// exitNoDocker is the exit code of a trial command refused because neither a
// Docker engine (kind) nor root (the Docker-less trial) is there.
const exitNoDocker = 2

// trialEnv says what this machine offers the trial: a Docker engine (kind) and
// root (the Docker-less trial, LocalUnavailable "" when it can run).
type trialEnv struct {
	docker trial.DockerCheck
	local  func() string
}

type trialFlags struct {
	name, dir     string
	image         string
	nodeImage     string
	workloadImage string
	timeout       time.Duration
	local         bool
	// buildImages: the kind trial's images built in Go from this binary and the
	// prebuilt binaries, loaded into the nodes (no docker build, nothing pulled).
	buildImages bool
	// archives and values serve a kind trial without registry access: images
	// loaded from archives, chart values such as vcluster.chart.dir.
	archives []string
	values   installer.ValueSources
}

func (f *trialFlags) options(streams cli.Streams, docker trial.DockerCheck) (trial.Options, error) {
	opts := trial.Options{
		Name: f.name, Dir: f.dir, Image: f.image, NodeImage: f.nodeImage, WorkloadImage: f.workloadImage,
		ImageArchives: f.archives, Timeout: f.timeout, Log: streams.ErrOut, Docker: docker,
	}
	if len(f.values.Files) == 0 {
		return opts, nil
	}
	vals, err := f.values.Merge()
	if err != nil {
		return opts, fmt.Errorf("--values: %w", err)
	}
	opts.Values = vals
	return opts, nil
}

// newTrialCommand returns `gpuvc dev trial`; env.docker decides whether a Docker
// engine answers (trial.DockerEngine outside tests), env.local whether the
// Docker-less trial can run (trial.LocalUnavailable).
func newTrialCommand(streams cli.Streams, env trialEnv) *cobra.Command {
	f := &trialFlags{}
	docker := env.docker
	cmd := &cobra.Command{
		Use:   "trial",
		Short: "The trial: a cluster with simulated GPUs, gpuvc installed, two teams running GPU pods in their own virtual clusters",
		Long: "The trial (`make trial`, docs/trial.md): gpuvc installed from its chart on a cluster with\n" +
			"simulated GPUs, and two teams running GPU pods in their own virtual clusters.\n" +
			"Without a Docker engine (or with --local) it runs on this machine's local control plane with a\n" +
			"real node (kubelet, containerd, runc; needs root and `make binaries`) and is left running;\n" +
			"where a Docker engine answers it runs on kind. Without either, it says what it needs.",
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
			local, err := useLocal(ctx, env, f.local)
			if err != nil {
				return refusal(err)
			}
			up := trial.Up
			if local {
				up = trial.UpLocal
			}
			opts, err := f.options(streams, docker)
			if err != nil {
				return err
			}
			if f.buildImages && !local {
				self, err := os.Executable()
				if err != nil {
					return err
				}
				if err := trial.UseBuiltImages(&opts, self); err != nil {
					return fmt.Errorf("--build-images: %w", err)
				}
			}
			res, err := up(ctx, opts)
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
	up.Flags().StringArrayVarP(&f.values.Files, "values", "f", nil, "chart values merged over the trial's, from a YAML file (repeatable; later files win), e.g. vcluster.chart.dir where no chart repository is reachable")
	up.Flags().StringArrayVar(&f.archives, "image-archive", nil, "docker-archive tarball loaded into every kind node instead of saving --image from the Docker engine (repeatable; one must hold --image), e.g. where nothing can be pulled")
	up.Flags().BoolVar(&f.buildImages, "build-images", false, "build every image the kind trial runs in Go from this binary and the prebuilt binaries (make binaries) and load them into the nodes, with chart values that use them: no docker build, nothing pulled but kind's node image (--node-image names one built offline); it replaces --image and --workload-image and excludes --image-archive")
	up.Flags().BoolVar(&f.local, "local", false, "run the Docker-less trial (local control plane, real node; needs root) even where a Docker engine answers; --image is ignored, the image is built from this binary")
	cmd.AddCommand(
		up,
		&cobra.Command{
			Use:   "down",
			Short: "Remove the trial: the local cluster and real node (every process, mount, cgroup, bridge, rule and path), the kind cluster, the kubeconfigs up wrote (succeeds if there is none, like rm -f)",
			Args:  cobra.NoArgs,
			RunE: func(cmd *cobra.Command, _ []string) error {
				opts, err := f.options(streams, docker)
				if err != nil {
					return err
				}
				if err := trial.DownLocal(cmd.Context(), opts); err != nil {
					return err
				}
				return trial.Down(cmd.Context(), opts)
			},
		},
		&cobra.Command{
			Use:   "check",
			Short: "Print which trial runs here: kind (a Docker engine answers) or local (no Docker, root); otherwise say what it needs (exit 2)",
			Args:  cobra.NoArgs,
			RunE: func(cmd *cobra.Command, _ []string) error {
				local, err := useLocal(cmd.Context(), env, false)
				if err != nil {
					return refusal(err)
				}
				if local {
					fmt.Fprintln(streams.ErrOut, "no Docker engine answers: the trial runs on the local control plane with a real node")
					_, err = fmt.Fprintln(streams.Out, "local")
					return err
				}
				fmt.Fprintln(streams.ErrOut, "a Docker engine answers: the kind trial can run here")
				_, err = fmt.Fprintln(streams.Out, "kind")
				return err
			},
		},
	)
	return cmd
}

// useLocal decides between the kind trial (a Docker engine answers) and the
// Docker-less one (forced, or no Docker engine); neither possible is
// trial.ErrCannotRun, saying what each needs.
func useLocal(ctx context.Context, env trialEnv, force bool) (bool, error) {
	dockerErr := error(nil)
	if !force {
		if dockerErr = env.docker(ctx); dockerErr == nil {
			return false, nil
		}
	}
	if why := env.local(); why != "" {
		if force {
			return false, fmt.Errorf("%w: the Docker-less trial cannot run: %s", trial.ErrCannotRun, why)
		}
		return false, trial.NeitherCanRun(dockerErr, why)
	}
	return true, nil
}

// refusal gives the refusal for lack of Docker and root its own exit code.
func refusal(err error) error {
	if errors.Is(err, trial.ErrNoDocker) || errors.Is(err, trial.ErrCannotRun) {
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
