package vclusters

import (
	"context"
	"errors"
	"fmt"
	"time"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage/driver"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
)

// Change says what Apply did.
type Change string

const (
	Installed Change = "Installed"
	Upgraded  Change = "Upgraded"
	Unchanged Change = "Unchanged"
)

// ApplyResult is the outcome of Apply.
type ApplyResult struct {
	Change Change
	// Revision is the release revision now current.
	Revision int
}

var (
	// ErrInvalidSpec wraps what Spec.Validate finds: retrying will not help.
	ErrInvalidSpec = errors.New("invalid vCluster spec")
	// ErrOperationInProgress: another install, upgrade or uninstall of the release
	// started less than the stale-after duration ago. Retry later.
	ErrOperationInProgress = errors.New("another Helm operation on this vCluster release is in progress")
)

// Apply makes the release of spec match it: installs it when absent, upgrades it
// when the chart or the values differ from the last revision, and does nothing (no
// new revision) when they are the same. It does not wait for the control plane to
// start: Ready tells that.
//
// Recovery of a release left behind by an earlier run:
//   - failed (an install or upgrade that errored): upgraded again with the desired
//     values — the retry that `helm upgrade` itself allows from a failed revision;
//   - pending-install/-upgrade/-rollback for longer than the stale-after duration
//     (the process died mid-operation): the revision is marked failed, then as above;
//     younger: ErrOperationInProgress;
//   - uninstalling for longer than the stale-after duration: the uninstall is
//     finished, then the release installed anew; younger: ErrOperationInProgress;
//   - uninstalled, with history kept by someone else: installed anew over it.
func (c *Client) Apply(ctx context.Context, spec Spec) (ApplyResult, error) {
	vals, err := HelmValues(spec)
	if err != nil {
		return ApplyResult{}, fmt.Errorf("%w: %w", ErrInvalidSpec, err)
	}
	if err := c.namespaceExists(ctx, spec.Namespace); err != nil {
		return ApplyResult{}, err
	}
	ch, err := c.charts.load(ctx, spec.Chart)
	if err != nil {
		return ApplyResult{}, err
	}
	cfg, err := c.actionConfig(ctx, spec.Namespace)
	if err != nil {
		return ApplyResult{}, err
	}
	logger := klog.FromContext(ctx).WithValues("release", klog.KRef(spec.Namespace, spec.Name))

	last, _, err := c.releases.last(ctx, cfg, spec.Namespace, spec.Name)
	if errors.Is(err, driver.ErrReleaseNotFound) {
		return c.install(ctx, cfg, spec, ch, vals, false)
	}
	if err != nil {
		return ApplyResult{}, fmt.Errorf("reading the history of release %s/%s: %w", spec.Namespace, spec.Name, err)
	}

	status := last.Status
	switch {
	case status == release.StatusDeployed:
		same, err := last.sameAs(ch, vals)
		if err != nil {
			return ApplyResult{}, err
		}
		if same {
			return ApplyResult{Change: Unchanged, Revision: last.Version}, nil
		}
	case status == release.StatusFailed, status == release.StatusSuperseded:
		logger.Info("Retrying release after a failed revision", "revision", last.Version, "description", last.Description)
	case status.IsPending():
		if err := c.checkStale(spec, last, last.LastDeployed); err != nil {
			return ApplyResult{}, err
		}
		logger.Info("Recovering release stuck in a pending state", "revision", last.Version, "status", status)
		rel, err := cfg.Releases.Get(spec.Name, last.Version)
		if err != nil {
			return ApplyResult{}, fmt.Errorf("reading revision %d of %s/%s: %w", last.Version, spec.Namespace, spec.Name, err)
		}
		rel.Info.Status = release.StatusFailed
		rel.Info.Description = fmt.Sprintf("gpuvc: marked failed after %s in %s (operation interrupted)", c.staleAfter, status)
		if err := cfg.Releases.Update(rel); err != nil {
			return ApplyResult{}, fmt.Errorf("marking stuck revision %d of %s/%s failed: %w", last.Version, spec.Namespace, spec.Name, err)
		}
	case status == release.StatusUninstalling:
		if err := c.checkStale(spec, last, last.Deleted); err != nil {
			return ApplyResult{}, err
		}
		logger.Info("Finishing an interrupted uninstall before installing again", "revision", last.Version)
		if err := c.uninstall(cfg, spec.Namespace, spec.Name); err != nil {
			return ApplyResult{}, err
		}
		return c.install(ctx, cfg, spec, ch, vals, false)
	case status == release.StatusUninstalled:
		return c.install(ctx, cfg, spec, ch, vals, true)
	default:
		return ApplyResult{}, fmt.Errorf("release %s/%s revision %d is in state %q, which gpuvc does not recover automatically", spec.Namespace, spec.Name, last.Version, status)
	}
	return c.upgrade(ctx, cfg, spec, ch, vals)
}

func (c *Client) namespaceExists(ctx context.Context, namespace string) error {
	_, err := c.kube.CoreV1().Namespaces().Get(ctx, namespace, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return fmt.Errorf("host namespace %s does not exist: create it before its vCluster", namespace)
	}
	if err != nil {
		return fmt.Errorf("reading host namespace %s: %w", namespace, err)
	}
	return nil
}

// checkStale returns ErrOperationInProgress while the operation that left rel in
// its state at since may still be running.
func (c *Client) checkStale(spec Spec, rel releaseSummary, since time.Time) error {
	age := c.clock.Since(since)
	if since.IsZero() || age >= c.staleAfter || c.leftByGoneProcess(since) {
		return nil
	}
	return fmt.Errorf("%w: revision %d of %s/%s has been %s for %s; it is taken as interrupted after %s",
		ErrOperationInProgress, rel.Version, spec.Namespace, spec.Name, rel.Status, age.Round(time.Second), c.staleAfter)
}

// leftByGoneProcess: the operation began before this process started acting
// alone, so whoever ran it is gone. Whole seconds, as Helm may store times
// truncated: an operation of this process's first second is never taken for
// a gone one's.
func (c *Client) leftByGoneProcess(since time.Time) bool {
	if c.aloneSince == nil {
		return false
	}
	alone := c.aloneSince()
	return !alone.IsZero() && since.Before(alone.Truncate(time.Second))
}

// skipHelmSchemaCheck turns off what Helm calls OpenAPI validation of the
// rendered objects. Against an API server that supports server-side field
// validation (GA since Kubernetes 1.27) it validates nothing: kubectl's
// validator only parses the OpenAPI v3 document of each object's group-version
// to learn that the server does, and Helm's creates do not ask for strict
// validation anyway. That parse, repeated by every install and upgrade (a
// fresh Helm client each time), was a quarter of the manager's CPU while
// teams were created (docs/benchmarks.md, "Team create → release applied").
// The API server still validates every object it is sent.
const skipHelmSchemaCheck = true

func (c *Client) install(ctx context.Context, cfg *action.Configuration, spec Spec, ch *chart.Chart, vals map[string]any, replace bool) (ApplyResult, error) {
	inst := action.NewInstall(cfg)
	inst.ReleaseName = spec.Name
	inst.Namespace = spec.Namespace
	inst.Replace = replace
	inst.Timeout = helmTimeout
	inst.Description = "gpuvc: install " + spec.Chart.String()
	inst.DisableOpenAPIValidation = skipHelmSchemaCheck
	rel, err := inst.RunWithContext(ctx, ch, vals)
	if err != nil {
		return ApplyResult{}, fmt.Errorf("installing vCluster %s/%s from %s: %w", spec.Namespace, spec.Name, spec.Chart, err)
	}
	return ApplyResult{Change: Installed, Revision: rel.Version}, nil
}

func (c *Client) upgrade(ctx context.Context, cfg *action.Configuration, spec Spec, ch *chart.Chart, vals map[string]any) (ApplyResult, error) {
	up := action.NewUpgrade(cfg)
	up.Namespace = spec.Namespace
	// The values are exactly what gpuvc computes now, never merged with old ones.
	up.ResetValues = true
	up.MaxHistory = c.maxHistory
	up.Timeout = helmTimeout
	up.Description = "gpuvc: upgrade " + spec.Chart.String()
	up.DisableOpenAPIValidation = skipHelmSchemaCheck
	rel, err := up.RunWithContext(ctx, spec.Name, ch, vals)
	if err != nil {
		return ApplyResult{}, fmt.Errorf("upgrading vCluster %s/%s with %s: %w", spec.Namespace, spec.Name, spec.Chart, err)
	}
	return ApplyResult{Change: Upgraded, Revision: rel.Version}, nil
}
