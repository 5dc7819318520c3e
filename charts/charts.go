// Package charts embeds gpuvc's own Helm chart so the binary can install its CRDs
// (and, later, the chart) without a checkout.
package charts

import (
	"context"
	"embed"
	"fmt"
	"io/fs"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/gpuvc/gpuvc/charts/crdinstall"
)

//go:embed gpuvc/crds/*.yaml
var crdFiles embed.FS

// CRDs returns the CustomResourceDefinitions of the gpuvc chart.
func CRDs() ([]*apiextensionsv1.CustomResourceDefinition, error) {
	paths, err := fs.Glob(crdFiles, "gpuvc/crds/*.yaml")
	if err != nil {
		return nil, err
	}
	var crds []*apiextensionsv1.CustomResourceDefinition
	for _, p := range paths {
		b, err := crdFiles.ReadFile(p)
		if err != nil {
			return nil, err
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.UnmarshalStrict(b, crd); err != nil {
			return nil, fmt.Errorf("parsing %s: %w", p, err)
		}
		crds = append(crds, crd)
	}
	return crds, nil
}

// InstallCRDs creates or updates gpuvc's CRDs and waits until each is Established.
func InstallCRDs(ctx context.Context, cfg *rest.Config) error {
	crds, err := CRDs()
	if err != nil {
		return err
	}
	return crdinstall.Apply(ctx, cfg, crds)
}
