// Package crdinstall applies CustomResourceDefinitions and waits until the API
// server serves them: gpuvc's own (charts.InstallCRDs) and Kueue's for the local
// runner (kind/localkueue). A leaf, so neither imports the other.
package crdinstall

import (
	"context"
	"fmt"
	"slices"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
)

// Apply creates or replaces each CRD, then waits until all are Established
// (served) and API discovery lists their kinds, so a caller may use them at
// once: a client whose REST mapper reads discovery right after Established can
// still get "no matches for kind".
func Apply(ctx context.Context, cfg *rest.Config, crds []*apiextensionsv1.CustomResourceDefinition) error {
	client, err := apiextensionsclient.NewForConfig(cfg)
	if err != nil {
		return err
	}
	api := client.ApiextensionsV1().CustomResourceDefinitions()
	for _, crd := range crds {
		existing, err := api.Get(ctx, crd.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			_, err = api.Create(ctx, crd, metav1.CreateOptions{})
		case err == nil:
			crd.ResourceVersion = existing.ResourceVersion
			_, err = api.Update(ctx, crd, metav1.UpdateOptions{})
		}
		if err != nil {
			return fmt.Errorf("installing CRD %s: %w", crd.Name, err)
		}
	}
	for _, crd := range crds {
		err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			got, err := api.Get(ctx, crd.Name, metav1.GetOptions{})
			if err != nil {
				return false, nil
			}
			for _, c := range got.Status.Conditions {
				if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
					return true, nil
				}
			}
			return false, nil
		})
		if err != nil {
			return fmt.Errorf("waiting for CRD %s to be established: %w", crd.Name, err)
		}
	}
	return waitDiscovery(ctx, cfg, crds)
}

// waitDiscovery waits until API discovery lists every CRD's kind in each served
// version: clients map kinds to resources through it.
func waitDiscovery(ctx context.Context, cfg *rest.Config, crds []*apiextensionsv1.CustomResourceDefinition) error {
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return err
	}
	want := map[string][]string{} // group/version -> plurals
	for _, crd := range crds {
		for _, v := range crd.Spec.Versions {
			if v.Served {
				gv := crd.Spec.Group + "/" + v.Name
				want[gv] = append(want[gv], crd.Spec.Names.Plural)
			}
		}
	}
	var missing string
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		for gv, plurals := range want {
			list, err := dc.ServerResourcesForGroupVersion(gv)
			if err != nil {
				missing = gv + ": " + err.Error()
				return false, nil
			}
			for _, p := range plurals {
				if !slices.ContainsFunc(list.APIResources, func(r metav1.APIResource) bool { return r.Name == p }) {
					missing = gv + "/" + p
					return false, nil
				}
			}
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for API discovery to list the CRDs' kinds (still missing %s): %w", missing, err)
	}
	return nil
}
