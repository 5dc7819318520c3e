package vclusters

import (
	"context"
	"errors"
	"fmt"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/storage/driver"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Uninstall removes the release of spec and everything it created, and its Helm
// history. Like `rm -f`, a release that does not exist is success. It does not wait
// for the control-plane pod to terminate. Persistent volume claims of the control
// plane follow the chart's retention policy (kept by default): deleting the host
// namespace removes them.
func (c *Client) Uninstall(ctx context.Context, spec Spec) error {
	// Only what names the release matters here: a spec that no longer validates
	// (e.g. a chart source that went away) must still be removable.
	if problems := validation.IsDNS1035Label(spec.Name); spec.Name == "" || len(problems) > 0 {
		return fmt.Errorf("%w: Name %q: %v", ErrInvalidSpec, spec.Name, problems)
	}
	if problems := validation.IsDNS1123Label(spec.Namespace); spec.Namespace == "" || len(problems) > 0 {
		return fmt.Errorf("%w: Namespace %q: %v", ErrInvalidSpec, spec.Namespace, problems)
	}
	cfg, err := c.actionConfig(ctx, spec.Namespace)
	if err != nil {
		return err
	}
	return c.uninstall(cfg, spec.Namespace, spec.Name)
}

func (c *Client) uninstall(cfg *action.Configuration, namespace, name string) error {
	defer c.releases.forget(namespace, name)
	if _, err := cfg.Releases.History(name); errors.Is(err, driver.ErrReleaseNotFound) {
		return nil
	}
	un := action.NewUninstall(cfg)
	un.IgnoreNotFound = true
	un.Timeout = helmTimeout
	un.Description = "gpuvc: uninstall"
	if _, err := un.Run(name); err != nil {
		return fmt.Errorf("uninstalling vCluster release %s: %w", name, err)
	}
	return nil
}
