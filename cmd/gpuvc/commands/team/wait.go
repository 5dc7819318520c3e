package team

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/gpuvc/gpuvc/cmd/gpuvc/commands/cli"
	"github.com/gpuvc/gpuvc/manager/teamctl"
)

// waitAndReport waits for a team to be Ready, printing each step, and ends with how
// to connect.
func waitAndReport(cmd *cobra.Command, streams cli.Streams, c *teamctl.Client, name string, timeout time.Duration) error {
	t, err := c.WaitReady(cmd.Context(), name, timeout, progressPrinter(streams, name))
	if err != nil {
		return err
	}
	answers(cmd.Context(), streams, c, name)
	fmt.Fprintf(streams.ErrOut, "team %s is ready in namespace %s; get its kubeconfig with:\n  gpuvc team kubeconfig %s -f %s.kubeconfig\n",
		name, t.Status.Namespace, name, name)
	return nil
}

// reachWithin bounds the wait for a Ready team's address to stop refusing.
const reachWithin = 30 * time.Second

// answers waits, briefly, until the address in the team's kubeconfig accepts
// connections from here, so the kubeconfig works the moment --wait returns: the
// host's service proxy refuses a new Service endpoint for a moment after the
// team turns Ready. An address this machine cannot reach at all (the team
// server is only reachable inside the host cluster) is said, not waited for.
func answers(ctx context.Context, streams cli.Streams, c *teamctl.Client, name string) {
	kc, err := c.Kubeconfig(ctx, name, "")
	if err != nil {
		return // the next line says how to get it; `team kubeconfig` explains failures
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(kc)
	if err != nil {
		return
	}
	err = teamctl.Reachable(ctx, cfg.Host, reachWithin, func(addr string, err error) {
		fmt.Fprintf(streams.ErrOut, "team %s: waiting for its API at %s to accept connections (the host's service proxy is catching up)\n", name, addr)
	})
	if err != nil {
		fmt.Fprintf(streams.ErrOut, "note: team %s's API at %s does not answer from this machine (%v); "+
			"its kubeconfig works where that address is reachable, see `--team-server-url` in docs/platform-guide.md\n", name, cfg.Host, err)
	}
}
