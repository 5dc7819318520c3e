package dev

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gpuvc/gpuvc/cmd/gpuvc/commands/cli"
	"github.com/gpuvc/gpuvc/e2e/localcp"
	"github.com/gpuvc/gpuvc/kind/localcluster"
	"github.com/gpuvc/gpuvc/kind/nodepool"
)

type clusterFlags struct {
	dir string
}

func newClusterCommand(streams cli.Streams) *cobra.Command {
	flags := &clusterFlags{}
	cmd := &cobra.Command{
		Use:   "cluster",
		Short: "Start, stop or locate the local control plane (etcd, kube-apiserver, controller-manager, scheduler, kwok GPU nodes)",
		Args:  cobra.NoArgs,
	}
	cmd.PersistentFlags().StringVar(&flags.dir, "dir", filepath.Join(localcluster.CacheDir(), "dev-cluster"),
		"folder holding the cluster's PKI, kubeconfig, data and logs")
	cmd.AddCommand(
		&cobra.Command{
			Use:   "up",
			Short: "Start the local control plane in the background and print the KUBECONFIG export",
			Long: "Start the local control plane in the background and print the KUBECONFIG export.\n" +
				"The first run builds the Kubernetes binaries from Go modules (several minutes); they\n" +
				"are cached outside the repository.",
			Args: cobra.NoArgs,
			RunE: func(cmd *cobra.Command, _ []string) error { return clusterUp(cmd.Context(), streams, flags) },
		},
		&cobra.Command{
			Use:   "down",
			Short: "Stop the local control plane and remove its folder (succeeds if none is running)",
			Args:  cobra.NoArgs,
			RunE:  func(*cobra.Command, []string) error { return clusterDown(streams, flags) },
		},
		&cobra.Command{
			Use:   "env",
			Short: "Print the KUBECONFIG export for the running local control plane",
			Args:  cobra.NoArgs,
			RunE:  func(*cobra.Command, []string) error { return clusterEnv(streams, flags) },
		},
	)
	return cmd
}

func clusterUp(ctx context.Context, streams cli.Streams, flags *clusterFlags) error {
	if running(flags.dir) {
		fmt.Fprintf(streams.ErrOut, "local control plane already running in %s\n", flags.dir)
		return clusterEnv(streams, flags)
	}
	// A stale folder (stopped processes, old PKI) would mix with the new cluster.
	if err := os.RemoveAll(flags.dir); err != nil {
		return err
	}
	if err := os.MkdirAll(flags.dir, 0o700); err != nil {
		return err
	}
	cp, err := localcp.Start(ctx, localcluster.Options{Dir: flags.dir, Detached: true, Log: streams.ErrOut})
	if err != nil {
		return err
	}
	var nodes []string
	for _, p := range nodepool.Default() {
		for _, n := range p.Nodes {
			nodes = append(nodes, p.Name+"/"+n.Name)
		}
	}
	fmt.Fprintf(streams.ErrOut, "nodes (pool/node): %s\nlogs: %s\nstop with: gpuvc dev cluster down\n",
		strings.Join(nodes, ", "), filepath.Join(cp.Dir, "logs"))
	return clusterEnv(streams, flags)
}

func clusterDown(streams cli.Streams, flags *clusterFlags) error {
	err := localcluster.StopDetached(flags.dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if err := os.RemoveAll(flags.dir); err != nil {
		return err
	}
	fmt.Fprintf(streams.ErrOut, "local control plane in %s stopped\n", flags.dir)
	return nil
}

func clusterEnv(streams cli.Streams, flags *clusterFlags) error {
	if !running(flags.dir) {
		return fmt.Errorf("no local control plane is running in %s: start one with `gpuvc dev cluster up`", flags.dir)
	}
	s, err := localcluster.ReadState(flags.dir)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(streams.Out, "export KUBECONFIG=%s\n", s.Kubeconfig)
	return err
}

// running reports whether the folder records a control plane whose API server lives.
func running(dir string) bool {
	s, err := localcluster.ReadState(dir)
	if err != nil {
		return false
	}
	pid, ok := s.PIDs[string(localcluster.APIServer)]
	return ok && localcluster.Alive(pid)
}
