package team

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"

	"github.com/gpuvc/gpuvc/api/contract"
	"github.com/gpuvc/gpuvc/cmd/gpuvc/commands/cli"
	"github.com/gpuvc/gpuvc/manager/teamctl"
)

// Completions ask the cluster; a shell waits for them at the prompt, so they give
// up quickly and, on any error, offer nothing rather than print into the prompt.
const completionTimeout = 5 * time.Second

type completionFunc = func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective)

// teamNames completes the names of existing Teams for a command taking at most maxArgs
// of them (0: any number), leaving out names already given.
func teamNames(globals *cli.Globals, maxArgs int) completionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		if maxArgs > 0 && len(args) >= maxArgs {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		cfg, ctx, cancel, ok := completionClient(cmd, globals)
		if !ok {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		defer cancel()
		c, err := teamctl.New(cfg)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		list, err := c.List(ctx)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		var names []string
		for _, t := range list.Items {
			if strings.HasPrefix(t.Name, toComplete) && !slices.Contains(args, t.Name) {
				names = append(names, t.Name)
			}
		}
		return names, cobra.ShellCompDirectiveNoFileComp
	}
}

// pools completes the node pools of the cluster: the distinct values of the
// gpuvc.dev/pool node label.
func pools(globals *cli.Globals) completionFunc {
	return func(cmd *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		cfg, ctx, cancel, ok := completionClient(cmd, globals)
		if !ok {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		defer cancel()
		mc, err := metadata.NewForConfig(cfg)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		nodes, err := mc.Resource(schema.GroupVersionResource{Version: "v1", Resource: "nodes"}).
			List(ctx, metav1.ListOptions{LabelSelector: contract.LabelPool})
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		var names []string
		for _, n := range nodes.Items {
			p := n.Labels[contract.LabelPool]
			if p != "" && strings.HasPrefix(p, toComplete) && !slices.Contains(names, p) {
				names = append(names, p)
			}
		}
		slices.Sort(names)
		return names, cobra.ShellCompDirectiveNoFileComp
	}
}

func completionClient(cmd *cobra.Command, globals *cli.Globals) (*rest.Config, context.Context, context.CancelFunc, bool) {
	cfg, err := globals.RESTConfig()
	if err != nil {
		return nil, nil, nil, false
	}
	cfg = rest.CopyConfig(cfg)
	cfg.Timeout = completionTimeout
	parent := cmd.Context()
	if parent == nil {
		parent = context.Background()
	}
	ctx, cancel := context.WithTimeout(parent, completionTimeout)
	return cfg, ctx, cancel, true
}

// withTeamNames makes a command complete team names for its arguments; for
// commands whose file is not this one's to change.
func withTeamNames(cmd *cobra.Command, globals *cli.Globals, maxArgs int) *cobra.Command {
	cmd.ValidArgsFunction = teamNames(globals, maxArgs)
	return cmd
}

// withPoolCompletion makes --pool complete the cluster's node pools.
func withPoolCompletion(cmd *cobra.Command, globals *cli.Globals) *cobra.Command {
	_ = cmd.RegisterFlagCompletionFunc("pool", pools(globals))
	return cmd
}
