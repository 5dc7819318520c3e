// Package uninstall implements `gpuvc uninstall`: remove gpuvc's Helm release from
// the host cluster.
package uninstall

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/util/validation"

	gpuvcv1 "github.com/gpuvc/gpuvc/api/v1alpha1"
	"github.com/gpuvc/gpuvc/charts/installer"
	"github.com/gpuvc/gpuvc/cmd/gpuvc/commands/cli"
)

type flags struct {
	namespace string
	force     bool
	wait      bool
	timeout   time.Duration
}

// NewCommand returns `gpuvc uninstall`.
func NewCommand(streams cli.Streams, globals *cli.Globals) *cobra.Command {
	f := &flags{}
	cmd := &cobra.Command{
		Use:   "uninstall [flags]",
		Short: "Remove gpuvc from the host cluster (succeeds if it is not installed, like rm -f)",
		Long: "Remove gpuvc's Helm release \"gpuvc\": the manager, its webhook configurations, the agents\n" +
			"and their RBAC. Uninstalling when gpuvc is not installed succeeds, like rm -f.\n\n" +
			"It refuses, removing nothing, while any Team exists: the manager is what deletes a\n" +
			"team's vCluster, host namespace and GPU reservations when its Team is deleted. Delete\n" +
			"the teams first (gpuvc team delete NAME --wait).\n\n" +
			"The Team CRD stays (Helm never deletes a chart's crds/), and so does the namespace.",
		Example: "  gpuvc uninstall --wait\n" +
			"  gpuvc uninstall -n gpuvc-system --force   # leaves existing teams unmanaged",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return f.run(cmd.Context(), streams, globals)
		},
	}
	fs := cmd.Flags()
	fs.StringVarP(&f.namespace, "namespace", "n", installer.DefaultNamespace, "namespace of the release")
	fs.BoolVar(&f.force, "force", false, "uninstall even while Teams exist. They are left unmanaged: their vClusters, namespaces\n"+
		"and GPU reservations keep running with nothing enforcing or cleaning up, and deleting a Team\n"+
		"then hangs on its finalizer "+gpuvcv1.Finalizer+" until gpuvc is installed again (or the\n"+
		"finalizer is removed by hand)")
	fs.BoolVar(&f.wait, "wait", false, "wait until the release's objects and their pods are gone, printing progress")
	fs.DurationVar(&f.timeout, "timeout", 5*time.Minute, "how long the uninstall, and --wait, may take")
	return cmd
}

func (f *flags) run(ctx context.Context, streams cli.Streams, globals *cli.Globals) error {
	if errs := validation.IsDNS1123Label(f.namespace); len(errs) > 0 {
		return fmt.Errorf("--namespace %q is not a valid namespace name: %s", f.namespace, strings.Join(errs, "; "))
	}
	if f.timeout <= 0 {
		return fmt.Errorf("--timeout %s: must be more than 0, e.g. --timeout 5m", f.timeout)
	}
	ctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	in, err := installer.NewForKubeconfig(globals.Kubeconfig, globals.Context, f.namespace)
	if err != nil {
		return err
	}
	res, err := in.Uninstall(ctx, installer.UninstallOptions{
		Force: f.force, Wait: f.wait, Timeout: f.timeout,
		Progress: func(elapsed time.Duration, remaining []string) {
			if len(remaining) == 0 {
				fmt.Fprintf(streams.ErrOut, "[%5.1fs] ✓ every object of the release is gone\n", elapsed.Seconds())
				return
			}
			fmt.Fprintf(streams.ErrOut, "[%5.1fs] … still being deleted: %s\n", elapsed.Seconds(), abbreviate(remaining, 4))
		},
	})
	if res != nil && res.Found {
		fmt.Fprintf(streams.Out, "gpuvc uninstalled: release %s, revision %d, namespace %s (%d objects deleted)\n", res.Release, res.Revision, res.Namespace, res.Deleted)
		if res.Kept != "" {
			fmt.Fprintln(streams.Out, strings.TrimSpace(res.Kept))
		}
		fmt.Fprintf(streams.Out, "kept: CRD %s (Helm never deletes a chart's CRDs; deleting one deletes every object of its kind) and namespace %s\n",
			strings.Join(res.CRDs, ", "), res.Namespace)
		if len(res.UnmanagedTeams) > 0 {
			fmt.Fprintf(streams.ErrOut, "warning: --force left these Teams without a manager: %s. Their vClusters and namespaces keep running; "+
				"deleting them waits on the finalizer %s until gpuvc is installed again\n",
				strings.Join(res.UnmanagedTeams, ", "), gpuvcv1.Finalizer)
		}
	}
	if err != nil {
		return err
	}
	if !res.Found {
		fmt.Fprintf(streams.Out, "release %s not found in namespace %s: nothing to uninstall\n", res.Release, res.Namespace)
	}
	return nil
}

// abbreviate lists the first n names and how many more there are.
func abbreviate(names []string, n int) string {
	if len(names) <= n {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:n], ", "), len(names)-n)
}
