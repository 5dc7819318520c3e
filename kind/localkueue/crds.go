package localkueue

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/gpuvc/gpuvc/charts/crdinstall"
)

// loadCRDs reads Kueue's CRDs from configDir/crd/bases and points the conversion
// webhook of those Kueue's own kustomization converts by webhook at
// webhookURL/convert, trusting caBundle.
func loadCRDs(configDir, webhookURL string, caBundle []byte) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	converted, err := webhookConvertedCRDs(filepath.Join(configDir, "crd"))
	if err != nil {
		return nil, err
	}
	files, err := filepath.Glob(filepath.Join(configDir, "crd", "bases", "*.yaml"))
	if err != nil || len(files) == 0 {
		return nil, fmt.Errorf("no Kueue CRDs in %s/crd/bases (the module's config/components folder): %v", configDir, err)
	}
	var crds []*apiextensionsv1.CustomResourceDefinition
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.Unmarshal(b, crd); err != nil {
			return nil, fmt.Errorf("reading Kueue CRD %s: %w", f, err)
		}
		if slices.Contains(converted, crd.Name) {
			crd.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{
				Strategy: apiextensionsv1.WebhookConverter,
				Webhook: &apiextensionsv1.WebhookConversion{
					ClientConfig: &apiextensionsv1.WebhookClientConfig{
						URL:      ptr.To(webhookURL + "/convert"),
						CABundle: caBundle,
					},
					ConversionReviewVersions: []string{"v1"},
				},
			}
		}
		crds = append(crds, crd)
	}
	return crds, nil
}

// webhookConvertedCRDs names the CRDs whose "webhook_in_" patch Kueue's CRD
// kustomization applies (the others convert between versions with None).
func webhookConvertedCRDs(crdDir string) ([]string, error) {
	b, err := os.ReadFile(filepath.Join(crdDir, "kustomization.yaml"))
	if err != nil {
		return nil, err
	}
	var k struct {
		Patches []struct {
			Path string `json:"path"`
		} `json:"patches"`
	}
	if err := yaml.Unmarshal(b, &k); err != nil {
		return nil, fmt.Errorf("reading %s/kustomization.yaml: %w", crdDir, err)
	}
	var names []string
	for _, p := range k.Patches {
		if !strings.HasPrefix(filepath.Base(p.Path), "webhook_in_") {
			continue
		}
		pb, err := os.ReadFile(filepath.Join(crdDir, p.Path))
		if err != nil {
			return nil, err
		}
		var patch metav1.PartialObjectMetadata
		if err := yaml.Unmarshal(pb, &patch); err != nil || patch.Name == "" {
			return nil, fmt.Errorf("reading the CRD name of %s: %v", p.Path, err)
		}
		names = append(names, patch.Name)
	}
	return names, nil
}

// applyCRDs creates or replaces each CRD and waits until API discovery lists
// them: Kueue sets up its indexes at start from discovery, and a kind that is
// established but not yet discovered makes it exit ("no matches for kind").
func applyCRDs(ctx context.Context, cfg *rest.Config, crds []*apiextensionsv1.CustomResourceDefinition) error {
	if err := crdinstall.Apply(ctx, cfg, crds); err != nil {
		return fmt.Errorf("Kueue's CRDs: %w", err)
	}
	return nil
}
