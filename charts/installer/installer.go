// Package installer installs, upgrades and uninstalls the gpuvc chart compiled into
// the binary (charts.Chart()) with the Helm v3 SDK: what `gpuvc install` and `gpuvc
// uninstall` do, as a library. The commands only parse flags and print.
package installer

import (
	"context"
	"errors"
	"fmt"
	"time"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/releaseutil"
	"helm.sh/helm/v3/pkg/storage/driver"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/gpuvc/gpuvc/charts"
)

const (
	// ReleaseName is the Helm release of gpuvc; there is one per cluster.
	ReleaseName = "gpuvc"
	// DefaultNamespace is where gpuvc is installed unless told otherwise.
	DefaultNamespace = "gpuvc-system"
	// MaxHistory is how many revisions an upgrade keeps (as `helm upgrade` does).
	MaxHistory = 10
)

// Action says what Install did.
type Action string

const (
	Installed Action = "installed"
	Upgraded  Action = "upgraded"
	Rendered  Action = "rendered" // a dry run: nothing was sent to a cluster
)

// Result describes a release after Install or Render.
type Result struct {
	Action     Action           `json:"action"`
	Release    string           `json:"release"`
	Namespace  string           `json:"namespace"`
	Revision   int              `json:"revision"`
	Status     string           `json:"status"`
	Chart      string           `json:"chart"`
	AppVersion string           `json:"appVersion"`
	Waited     bool             `json:"waited"`
	Workloads  []WorkloadStatus `json:"workloads,omitempty"`
	CRDs       []string         `json:"crds"`
	// Kueue is what the cluster serves of Kueue (nil with --kueue=off).
	Kueue *KueueReport `json:"kueue,omitempty"`
	// Notes are things the user should know about this run.
	Notes []string `json:"notes,omitempty"`
	// Manifest is the rendered chart (dry runs only), CRDs first.
	Manifest string `json:"manifest,omitempty"`
}

func newResult(rel *release.Release, act Action, namespace string) *Result {
	r := &Result{Action: act, Release: rel.Name, Namespace: namespace, Revision: rel.Version, CRDs: crdNames()}
	if rel.Info != nil {
		r.Status = rel.Info.Status.String()
	}
	if rel.Chart != nil && rel.Chart.Metadata != nil {
		r.Chart = rel.Chart.Metadata.Name + "-" + rel.Chart.Metadata.Version
		r.AppVersion = rel.Chart.Metadata.AppVersion
	}
	return r
}

func crdNames() []string {
	crds, err := charts.CRDs()
	if err != nil {
		return nil
	}
	names := make([]string, 0, len(crds))
	for _, c := range crds {
		names = append(names, c.Name)
	}
	return names
}

// Render renders the chart with the values for namespace without any cluster (Helm's
// client-only install, as `helm template`), for --dry-run.
func Render(ctx context.Context, namespace string, vals map[string]any) (*Result, error) {
	ch, err := charts.Chart()
	if err != nil {
		return nil, err
	}
	if _, err := checkValues(ch, vals); err != nil {
		return nil, err
	}
	cfg := &action.Configuration{Log: func(string, ...any) {}}
	inst := action.NewInstall(cfg)
	inst.ReleaseName, inst.Namespace = ReleaseName, namespace
	inst.DryRun, inst.ClientOnly, inst.Replace, inst.IncludeCRDs = true, true, true, true
	rel, err := inst.RunWithContext(ctx, ch, vals)
	if err != nil {
		return nil, fmt.Errorf("rendering the gpuvc chart: %w", err)
	}
	r := newResult(rel, Rendered, namespace)
	r.Status, r.Manifest = "not installed (dry run)", rel.Manifest
	return r, nil
}

// Installer installs gpuvc on one host cluster, in one namespace.
type Installer struct {
	cfg       *action.Configuration
	namespace string
	rest      *rest.Config
	kube      kubernetes.Interface
	// Interval is how often --wait polls (default 250ms).
	Interval time.Duration
}

// New returns an Installer for the cluster getter points at; it does not contact the
// cluster yet.
func New(getter genericclioptions.RESTClientGetter, namespace string) (*Installer, error) {
	restCfg, err := getter.ToRESTConfig()
	if err != nil {
		return nil, err
	}
	kube, err := kubernetes.NewForConfig(restCfg)
	if err != nil {
		return nil, err
	}
	cfg := &action.Configuration{}
	if err := cfg.Init(getter, namespace, "secret", func(string, ...any) {}); err != nil {
		return nil, err
	}
	return &Installer{cfg: cfg, namespace: namespace, rest: restCfg, kube: kube, Interval: 250 * time.Millisecond}, nil
}

// NewForKubeconfig returns an Installer for a kubeconfig path ("": $KUBECONFIG or
// ~/.kube/config) and context ("": the current one), resolved as kubectl does.
func NewForKubeconfig(kubeconfig, kubeContext, namespace string) (*Installer, error) {
	flags := genericclioptions.NewConfigFlags(false)
	flags.KubeConfig, flags.Context, flags.Namespace = &kubeconfig, &kubeContext, &namespace
	in, err := New(flags, namespace)
	switch {
	case clientcmd.IsEmptyConfig(err):
		return nil, fmt.Errorf("no kubeconfig for the host cluster: pass --kubeconfig (and --context), or set KUBECONFIG")
	case err != nil:
		return nil, fmt.Errorf("reading the host cluster's kubeconfig (--kubeconfig %q, --context %q): %w", kubeconfig, kubeContext, err)
	}
	return in, nil
}

// reach fails fast, naming the server, when the cluster does not answer.
func (in *Installer) reach() error {
	if _, err := in.kube.Discovery().ServerVersion(); err != nil {
		return fmt.Errorf("cannot reach the host cluster at %s (chosen by --kubeconfig and --context): %w", in.rest.Host, err)
	}
	return nil
}

// InstallOptions are Install's inputs.
type InstallOptions struct {
	// Values are the user's values (ValueSources.Merge), over the chart's defaults.
	Values map[string]any
	// ReuseValues keeps the previous revision's user values under Values. Without it
	// a revision has exactly the values given (Helm's --reset-values): a run without
	// -f/--set returns every key to the chart's default.
	ReuseValues bool
	// CreateNamespace creates the namespace when missing.
	CreateNamespace bool
	// Wait waits until the manager, its webhook endpoints and the agents are ready,
	// reporting progress; the deadline is ctx's.
	Wait     bool
	Progress Progress
	// Timeout bounds Helm's own operations (gpuvc's chart has no hooks today).
	Timeout time.Duration
	// Kueue: detect (""), require or off (kueue.go).
	Kueue KueueMode
}

// Install installs the release, or upgrades it when it exists (`helm upgrade
// --install`), after creating or updating the chart's CRDs, which Helm itself only
// creates on a first install and never updates.
func (in *Installer) Install(ctx context.Context, opts InstallOptions) (*Result, error) {
	ch, err := charts.Chart()
	if err != nil {
		return nil, err
	}
	vals := opts.Values
	if vals == nil {
		vals = map[string]any{}
	}
	if _, err := checkValues(ch, vals); err != nil {
		return nil, err
	}
	if err := in.reach(); err != nil {
		return nil, err
	}
	kueue, err := in.checkKueue(opts.Kueue)
	if err != nil {
		return nil, err
	}
	last, err := in.lastRelease()
	if err != nil {
		return nil, err
	}
	fresh := last == nil || last.Info.Status == release.StatusUninstalled
	var notes []string
	if !fresh {
		if last.Info.Status.IsPending() {
			return nil, fmt.Errorf("release %s in namespace %s is %s: an earlier install, upgrade or rollback did not finish. "+
				"Roll it back with `helm rollback %s -n %s`, or remove it with `gpuvc uninstall -n %s`, then install again",
				ReleaseName, in.namespace, last.Info.Status, ReleaseName, in.namespace, in.namespace)
		}
		switch {
		case opts.ReuseValues:
			vals = Overlay(last.Config, vals)
		case len(last.Config) > 0 && len(opts.Values) == 0:
			notes = append(notes, fmt.Sprintf("revision %d had values of its own and this run passes none: every key is back to the chart's default (pass the same -f/--set again, or --reuse-values)", last.Version))
		}
	}
	coalesced, err := checkValues(ch, vals)
	if err != nil {
		return nil, err
	}
	if n := RuntimeNote(coalesced); n != "" {
		notes = append(notes, n)
	}
	if err := in.preflight(ctx, coalesced, fresh, opts.CreateNamespace); err != nil {
		return nil, err
	}
	// CRDs before the templates, as Helm orders crds/, so a new manager meets its schema.
	if err := charts.InstallCRDs(ctx, in.rest); err != nil {
		return nil, err
	}

	var rel *release.Release
	act := Upgraded
	if fresh {
		act = Installed
		inst := action.NewInstall(in.cfg)
		inst.ReleaseName, inst.Namespace, inst.CreateNamespace = ReleaseName, in.namespace, opts.CreateNamespace
		inst.Timeout, inst.SkipCRDs, inst.Replace = opts.Timeout, true, last != nil
		rel, err = inst.RunWithContext(ctx, ch, vals)
	} else {
		up := action.NewUpgrade(in.cfg)
		up.Namespace, up.ResetValues, up.MaxHistory, up.Timeout = in.namespace, true, MaxHistory, opts.Timeout
		up.SkipCRDs = true
		rel, err = up.RunWithContext(ctx, ReleaseName, ch, vals)
	}
	if err != nil {
		return nil, fmt.Errorf("helm %s of %s in namespace %s: %w", map[Action]string{Installed: "install", Upgraded: "upgrade"}[act], ReleaseName, in.namespace, err)
	}
	res := newResult(rel, act, in.namespace)
	res.Kueue = kueue
	res.Notes = notes
	ws, err := Workloads(rel.Manifest, in.namespace)
	if err != nil {
		return res, err
	}
	if !opts.Wait {
		res.Workloads, err = Snapshot(ctx, in.kube, ws)
		return res, err
	}
	res.Waited = true
	res.Workloads, err = WaitReady(ctx, in.kube, ws, in.Interval, opts.Progress)
	if err != nil {
		return res, fmt.Errorf("gpuvc %s (release %s revision %d in namespace %s) but %w", act, ReleaseName, rel.Version, in.namespace, err)
	}
	return res, nil
}

// lastRelease returns the newest revision of the release, nil when there is none.
func (in *Installer) lastRelease() (*release.Release, error) {
	rels, err := action.NewHistory(in.cfg).Run(ReleaseName)
	if errors.Is(err, driver.ErrReleaseNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if len(rels) == 0 {
		return nil, nil
	}
	releaseutil.SortByRevision(rels)
	return rels[len(rels)-1], nil
}

// requiredAPIs are APIs some values need that the chart does not bring.
var requiredAPIs = []struct {
	key, groupVersion, fix string
}{
	{"certManager.enabled", "cert-manager.io/v1",
		"install cert-manager first (https://cert-manager.io/docs/installation/), or pass --set certManager.enabled=false to let the manager rotate its own webhook certificate"},
	{"metrics.serviceMonitor.enabled", "monitoring.coreos.com/v1",
		"install the Prometheus operator's CRDs first, or leave metrics.serviceMonitor.enabled false"},
}

// preflight refuses, before anything is changed, what would fail half-way: APIs
// the values need and the cluster lacks, a missing namespace, gpuvc installed in
// another namespace.
func (in *Installer) preflight(ctx context.Context, vals chartutil.Values, fresh, createNamespace bool) error {
	for _, r := range requiredAPIs {
		on, _ := vals.PathValue(r.key)
		if on != true {
			continue
		}
		if _, err := in.kube.Discovery().ServerResourcesForGroupVersion(r.groupVersion); err != nil {
			if apierrors.IsNotFound(err) {
				return fmt.Errorf("%s is true but this cluster has no %s API: %s", r.key, r.groupVersion, r.fix)
			}
			return fmt.Errorf("checking for the %s API (%s): %w", r.groupVersion, r.key, err)
		}
	}
	if !fresh {
		return nil
	}
	if !createNamespace {
		if _, err := in.kube.CoreV1().Namespaces().Get(ctx, in.namespace, metav1.GetOptions{}); apierrors.IsNotFound(err) {
			return fmt.Errorf("namespace %s does not exist: create it, or drop --create-namespace=false", in.namespace)
		}
	}
	// The webhook configurations are cluster-scoped with fixed names: gpuvc is one
	// per cluster. Helm's own message for this is about ownership metadata.
	wh, err := in.kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, charts.WebhookConfigurationName, metav1.GetOptions{})
	if err == nil {
		if ns := wh.Annotations["meta.helm.sh/release-namespace"]; ns != "" && ns != in.namespace {
			return fmt.Errorf("gpuvc is already installed in namespace %s (release %s); it runs once per cluster: upgrade it with `gpuvc install -n %s`, or remove it with `gpuvc uninstall -n %s` first",
				ns, wh.Annotations["meta.helm.sh/release-name"], ns, ns)
		}
	}
	return nil
}

// checkValues validates values over the chart's defaults and returns the result.
func checkValues(ch *chart.Chart, vals map[string]any) (chartutil.Values, error) {
	coalesced, err := chartutil.CoalesceValues(ch, vals)
	if err != nil {
		return nil, fmt.Errorf("merging the values with the chart's defaults: %w", err)
	}
	if err := chartutil.ValidateAgainstSchema(ch, coalesced); err != nil {
		return nil, newValuesError(err.Error(), coalesced)
	}
	return coalesced, nil
}
