package vclusters

import (
	"context"
	"errors"
	"fmt"
	"time"

	"helm.sh/helm/v3/pkg/storage/driver"
)

// ErrReleaseNotFound: the release of a spec is not installed.
var ErrReleaseNotFound = errors.New("vCluster release not found")

// ReleaseInfo is the latest revision of a release as Helm recorded it.
type ReleaseInfo struct {
	Revision int
	// Status is Helm's: deployed, failed, pending-install, pending-upgrade, ...
	Status       string
	Description  string
	ChartVersion string
	Updated      time.Time
}

// Release returns the latest revision of spec's release, or ErrReleaseNotFound.
func (c *Client) Release(ctx context.Context, spec Spec) (ReleaseInfo, error) {
	cfg, err := c.actionConfig(ctx, spec.Namespace)
	if err != nil {
		return ReleaseInfo{}, err
	}
	rel, err := cfg.Releases.Last(spec.Name)
	if errors.Is(err, driver.ErrReleaseNotFound) {
		return ReleaseInfo{}, fmt.Errorf("%w: %s/%s", ErrReleaseNotFound, spec.Namespace, spec.Name)
	}
	if err != nil {
		return ReleaseInfo{}, fmt.Errorf("reading release %s/%s: %w", spec.Namespace, spec.Name, err)
	}
	info := ReleaseInfo{
		Revision:    rel.Version,
		Status:      rel.Info.Status.String(),
		Description: rel.Info.Description,
		Updated:     rel.Info.LastDeployed.Time,
	}
	if rel.Chart != nil && rel.Chart.Metadata != nil {
		info.ChartVersion = rel.Chart.Metadata.Version
	}
	return info, nil
}
