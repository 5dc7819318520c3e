// Package install implements `gpuvc install`: install or upgrade gpuvc on the host
// cluster from the Helm chart built into the binary.
package install

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/gpuvc/gpuvc/charts/installer"
	"github.com/gpuvc/gpuvc/cmd/gpuvc/commands/cli"
)

type flags struct {
	namespace       string
	createNamespace bool
	values          installer.ValueSources
	reuseValues     bool
	wait            bool
	timeout         time.Duration
	dryRun          bool
	kueue           string
	out             *cli.Output
}

// NewCommand returns `gpuvc install`.
func NewCommand(streams cli.Streams, globals *cli.Globals) *cobra.Command {
	f := &flags{out: cli.NewOutput("table", "yaml", "json")}
	cmd := &cobra.Command{
		Use:   "install [flags]",
		Short: "Install or upgrade gpuvc on the host cluster (the chart built into this binary)",
		Long: "Install gpuvc on the host cluster, or upgrade it when it is installed (like\n" +
			"`helm upgrade --install`): the Helm release \"gpuvc\" of the chart compiled into this\n" +
			"binary, with the Team CRD, the manager (Team reconciler, pod webhook, share controller)\n" +
			"and the GPU node agents. Running it again is safe; each run is a new Helm revision.\n\n" +
			"Values are merged as Helm merges them: -f files in order, then --set-json, --set and\n" +
			"--set-string. Each run uses exactly the values it is given (keep them in a file);\n" +
			"--reuse-values keeps the previous revision's values under the new ones. Values are\n" +
			"checked against the chart's schema before anything is sent to the cluster.\n\n" +
			"The CRDs are created or updated first (Helm itself installs a chart's crds/ only once\n" +
			"and never updates or deletes them). --wait waits until the manager's replicas, the\n" +
			"webhook's endpoints and the agent DaemonSets are ready, printing progress to stderr.\n\n" +
			"Teams with spec.queueing need Kueue (kueue.x-k8s.io/v1beta2, Kueue v0.15 or later),\n" +
			"which gpuvc does not install: --kueue=detect (default) reports whether the cluster\n" +
			"serves it, --kueue=require refuses to install without it, --kueue=off does not look.",
		Example: "  gpuvc install --wait\n" +
			"  gpuvc install -f gpuvc-values.yaml --set manager.replicas=3 --wait --timeout 10m\n" +
			"  gpuvc install --set certManager.enabled=false --wait     # no cert-manager: the manager rotates its own certificate\n" +
			"  gpuvc install --dry-run -f gpuvc-values.yaml > gpuvc.yaml # render only, no cluster needed",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return f.run(cmd.Context(), streams, globals)
		},
	}
	fs := cmd.Flags()
	fs.StringVarP(&f.namespace, "namespace", "n", installer.DefaultNamespace, "namespace of the release and the manager")
	fs.BoolVar(&f.createNamespace, "create-namespace", true, "create the namespace if it does not exist")
	fs.StringArrayVarP(&f.values.Files, "values", "f", nil, "chart values from a YAML file, an http(s) URL or - for stdin (repeatable; later files win)")
	fs.StringArrayVar(&f.values.Set, "set", nil, "chart value KEY=VALUE, e.g. manager.replicas=3 (repeatable, comma-separated)")
	fs.StringArrayVar(&f.values.SetString, "set-string", nil, "chart value KEY=VALUE kept as a string, e.g. image.tag=1.0 (repeatable)")
	fs.StringArrayVar(&f.values.SetJSON, "set-json", nil, `chart value KEY=JSON, e.g. 'manager.nodeSelector={"gpuvc.dev/pool":"system"}' (repeatable)`)
	fs.BoolVar(&f.reuseValues, "reuse-values", false, "keep the previous revision's values under the ones given now")
	fs.BoolVar(&f.wait, "wait", false, "wait until the manager, its webhook endpoints and the agents are ready, printing progress")
	fs.DurationVar(&f.timeout, "timeout", 5*time.Minute, "how long the install or upgrade, and --wait, may take")
	fs.StringVar(&f.kueue, "kueue", string(installer.KueueDetect), "Kueue, for Teams with spec.queueing: detect (report whether it is there), require (refuse to install without it) or off")
	fs.BoolVar(&f.dryRun, "dry-run", false, "print the rendered manifests (CRDs included) without contacting a cluster")
	f.out.AddFlag(fs)
	return cmd
}

// validate checks what cobra cannot: formats, names, combinations.
func (f *flags) validate() error {
	if err := f.out.Validate(); err != nil {
		return err
	}
	if errs := validation.IsDNS1123Label(f.namespace); len(errs) > 0 {
		return fmt.Errorf("--namespace %q is not a valid namespace name: %s", f.namespace, strings.Join(errs, "; "))
	}
	if f.timeout <= 0 {
		return fmt.Errorf("--timeout %s: must be more than 0, e.g. --timeout 5m", f.timeout)
	}
	if _, err := installer.ParseKueueMode(f.kueue); err != nil {
		return err
	}
	if f.dryRun && f.wait {
		return fmt.Errorf("--dry-run and --wait cannot be combined: a dry run creates nothing to wait for")
	}
	if f.dryRun && f.reuseValues {
		return fmt.Errorf("--dry-run and --reuse-values cannot be combined: a dry run does not read the cluster's previous values")
	}
	return nil
}

func (f *flags) run(ctx context.Context, streams cli.Streams, globals *cli.Globals) error {
	if err := f.validate(); err != nil {
		return err
	}
	vals, err := f.values.Merge()
	if err != nil {
		return err
	}
	if err := installer.Check(vals); err != nil {
		return err // before any cluster is contacted
	}
	ctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	if f.dryRun {
		res, err := installer.Render(ctx, f.namespace, vals)
		if err != nil {
			return err
		}
		if done, err := f.out.PrintStructured(streams.Out, res); done {
			return err
		}
		fmt.Fprintf(streams.ErrOut, "dry run: release %s of %s for namespace %s rendered; nothing was sent to a cluster\n", res.Release, res.Chart, res.Namespace)
		_, err = io.WriteString(streams.Out, res.Manifest)
		return err
	}
	in, err := installer.NewForKubeconfig(globals.Kubeconfig, globals.Context, f.namespace)
	if err != nil {
		return err
	}
	res, err := in.Install(ctx, installer.InstallOptions{
		Values: vals, ReuseValues: f.reuseValues, CreateNamespace: f.createNamespace,
		Wait: f.wait, Progress: progress(streams.ErrOut), Timeout: f.timeout, Kueue: installer.KueueMode(f.kueue),
	})
	if res != nil {
		for _, n := range res.Notes {
			fmt.Fprintf(streams.ErrOut, "note: %s\n", n)
		}
		if done, perr := f.out.PrintStructured(streams.Out, res); done {
			if perr != nil {
				return perr
			}
		} else {
			printSummary(streams.Out, res)
		}
	}
	if err != nil {
		return err
	}
	if f.out.Format == "table" {
		if !res.Waited {
			fmt.Fprintln(streams.ErrOut, "not waited for: add --wait to wait until everything is ready")
		}
		fmt.Fprintln(streams.ErrOut, "next: gpuvc team create NAME --pool POOL --gpus N --wait")
	}
	return nil
}

// progress prints each workload's status change while waiting, as `gpuvc team
// create --wait` prints condition changes.
func progress(w io.Writer) installer.Progress {
	return func(elapsed time.Duration, s installer.WorkloadStatus) {
		mark := "…"
		if s.Ready {
			mark = "✓"
		}
		fmt.Fprintf(w, "[%5.1fs] %s %s: %s\n", elapsed.Seconds(), mark, s.Workload, s.Status)
	}
}

// printSummary prints what was installed and what runs, kubectl-style.
func printSummary(w io.Writer, r *installer.Result) {
	fmt.Fprintf(w, "gpuvc %s: release %s, revision %d, namespace %s, chart %s (app %s), %s\n",
		r.Action, r.Release, r.Revision, r.Namespace, r.Chart, r.AppVersion, r.Status)
	if len(r.Workloads) > 0 {
		tw := tabwriter.NewWriter(w, 0, 8, 3, ' ', 0)
		fmt.Fprintln(tw, "KIND\tNAME\tREADY\tSTATUS")
		for _, s := range r.Workloads {
			ready := "no"
			if s.Ready {
				ready = "yes"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", s.Kind, s.Name, ready, s.Status)
		}
		_ = tw.Flush()
	}
	if r.Kueue != nil {
		fmt.Fprintf(w, "Kueue: %s\n", r.Kueue.Message)
	}
	fmt.Fprintf(w, "CRDs: %s (created or updated by gpuvc install; Helm never deletes them, so gpuvc uninstall keeps them)\n", strings.Join(r.CRDs, ", "))
}
