package dev

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/gpuvc/gpuvc/cmd/gpuvc/commands/cli"
	"github.com/gpuvc/gpuvc/kind/localcluster"
	"github.com/gpuvc/gpuvc/kind/localstack"
)

type clusterFlags struct {
	dir      string
	kwokOnly bool
	kueue    bool
}

func newClusterCommand(streams cli.Streams) *cobra.Command {
	flags := &clusterFlags{}
	cmd := &cobra.Command{
		Use:   "cluster",
		Short: "Start, stop or locate the local cluster (etcd, kube-apiserver, controller-manager, scheduler, a real node, kwok GPU nodes)",
		Args:  cobra.NoArgs,
	}
	cmd.PersistentFlags().StringVar(&flags.dir, "dir", filepath.Join(localcluster.CacheDir(), "dev-cluster"),
		"folder holding the cluster's PKI, kubeconfig, data, node and logs")
	up := &cobra.Command{
		Use:   "up",
		Short: "Start the local cluster in the background and print the KUBECONFIG export",
		Long: "Start the local cluster in the background and print the KUBECONFIG export: a real control\n" +
			"plane and, as root, a real node (system-0: kubelet, containerd, runc, kube-proxy, kube-router,\n" +
			"simulated GPUs) where the manager and every team's vCluster run, so `gpuvc team create --wait`\n" +
			"reaches Ready with a working kubeconfig; plus kwok GPU nodes (pools a100, h100) whose pods are\n" +
			"only marked Running. Not root, or with --kwok-only: kwok nodes only. --kueue also runs Kueue\n" +
			"(the prebuilt controller as a local process), for Teams with spec.queueing.\n" +
			"It runs prebuilt binaries: `make binaries` in a gpuvc checkout builds them once (~16 min).",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return clusterUp(cmd.Context(), streams, flags) },
	}
	up.Flags().BoolVar(&flags.kueue, "kueue", false, "also run Kueue "+localcluster.KueueVersion+" (as root: it needs /etc/kueue), for Teams with spec.queueing")
	up.Flags().BoolVar(&flags.kwokOnly, "kwok-only", false, "no real node: every node is a kwok node (no root needed; no vCluster serves, team kubeconfigs stay pending)")
	cmd.AddCommand(
		up,
		&cobra.Command{
			Use:   "down",
			Short: "Stop the local cluster, remove its real node (processes, mounts, cgroups, bridge, rules) and its folder (succeeds if none is running)",
			Args:  cobra.NoArgs,
			RunE:  func(cmd *cobra.Command, _ []string) error { return clusterDown(cmd.Context(), streams, flags) },
		},
		&cobra.Command{
			Use:   "env",
			Short: "Print the KUBECONFIG export for the running local cluster",
			Args:  cobra.NoArgs,
			RunE:  func(*cobra.Command, []string) error { return clusterEnv(streams, flags) },
		},
	)
	return cmd
}

func clusterUp(ctx context.Context, streams cli.Streams, flags *clusterFlags) error {
	if localstack.Running(flags.dir) {
		fmt.Fprintf(streams.ErrOut, "local cluster already running in %s\n", flags.dir)
		return clusterEnv(streams, flags)
	}
	kwokOnly := flags.kwokOnly
	if why := localstack.RealNodeUnavailable(); why != "" && !kwokOnly {
		fmt.Fprintf(streams.ErrOut, "no real node (%s): kwok nodes only\n", why)
		kwokOnly = true
	}
	// A stale folder (stopped processes, old PKI, a node's record) is removed first.
	if err := localstack.Down(ctx, flags.dir, streams.ErrOut); err != nil {
		return err
	}
	s, err := localstack.Up(ctx, localstack.Options{Dir: flags.dir, KwokOnly: kwokOnly, Kueue: flags.kueue, Log: streams.ErrOut})
	if err != nil {
		return err
	}
	var nodes []string
	if s.Node != nil {
		nodes = append(nodes, localstack.RealPool+"/"+s.Node.Name+" (real)")
	}
	for _, p := range s.Pools {
		for _, n := range p.Nodes {
			nodes = append(nodes, p.Name+"/"+n.Name)
		}
	}
	fmt.Fprintf(streams.ErrOut, "nodes (pool/node): %s\nlogs: %s\n", strings.Join(nodes, ", "), filepath.Join(localstack.ClusterDir(flags.dir), "logs"))
	if s.Kueue != nil {
		fmt.Fprintf(streams.ErrOut, "kueue %s: running (log %s); Teams may set spec.queueing\n", localcluster.KueueVersion, s.Kueue.LogPath)
	}
	if s.Node != nil {
		values := filepath.Join(flags.dir, "values.yaml")
		b, err := yaml.Marshal(localstack.Values())
		if err != nil {
			return err
		}
		if err := os.WriteFile(values, b, 0o644); err != nil {
			return err
		}
		fmt.Fprintf(streams.ErrOut, "install gpuvc on it (images are on the node already): gpuvc install -f %s --wait\n", values)
	}
	fmt.Fprintln(streams.ErrOut, "stop with: gpuvc dev cluster down")
	return clusterEnv(streams, flags)
}

func clusterDown(ctx context.Context, streams cli.Streams, flags *clusterFlags) error {
	if err := localstack.Down(ctx, flags.dir, streams.ErrOut); err != nil {
		return err
	}
	fmt.Fprintf(streams.ErrOut, "local cluster in %s stopped\n", flags.dir)
	return nil
}

func clusterEnv(streams cli.Streams, flags *clusterFlags) error {
	if !localstack.Running(flags.dir) {
		return fmt.Errorf("no local control plane is running in %s: start one with `gpuvc dev cluster up`", flags.dir)
	}
	s, err := localcluster.ReadState(localstack.ClusterDir(flags.dir))
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(streams.Out, "export KUBECONFIG=%s\n", s.Kubeconfig)
	return err
}
