package vclusters

import (
	"context"
	"fmt"

	"helm.sh/helm/v3/pkg/action"
)

// Render returns the manifests Apply would install for spec, rendered on the client
// without a cluster (as `helm template` does): for dry runs and for inspecting what
// a Spec turns into. The chart is fetched as Apply would.
func Render(ctx context.Context, spec Spec) (string, error) {
	vals, err := HelmValues(spec)
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrInvalidSpec, err)
	}
	var cache chartCache
	ch, err := cache.load(ctx, spec.Chart)
	if err != nil {
		return "", err
	}
	inst := action.NewInstall(&action.Configuration{Log: func(string, ...any) {}})
	inst.DryRun = true
	inst.ClientOnly = true
	inst.ReleaseName = spec.Name
	inst.Namespace = spec.Namespace
	rel, err := inst.RunWithContext(ctx, ch, vals)
	if err != nil {
		return "", fmt.Errorf("rendering %s for %s/%s: %w", spec.Chart, spec.Namespace, spec.Name, err)
	}
	return rel.Manifest, nil
}
