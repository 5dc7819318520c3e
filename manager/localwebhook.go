package manager

import (
	"context"
	"fmt"
	"net/url"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/gpuvc/gpuvc/api/pki"
	"github.com/gpuvc/gpuvc/syncer"
)

// WebhookConfigName names the webhook configurations gpuvc registers.
const WebhookConfigName = "gpuvc-syncer"

// ServeWebhookAt prepares a manager that runs outside the cluster (a developer's
// process, or tests) to be called by the API server at baseURL: it writes a fresh
// serving certificate for the URL's host into certDir and registers the webhook
// configurations pointing at baseURL with that CA. In a cluster the chart does
// this with a Service and managed certificates instead.
func ServeWebhookAt(ctx context.Context, cfg *rest.Config, baseURL, certDir string) error {
	u, err := url.Parse(baseURL)
	if err != nil || u.Scheme != "https" || u.Hostname() == "" {
		return fmt.Errorf("--webhook-url %q: want https://<host>:<port>, e.g. https://127.0.0.1:9443", baseURL)
	}
	bundle, err := pki.NewServing([]string{u.Hostname()}, 365*24*time.Hour)
	if err != nil {
		return err
	}
	if err := bundle.WriteFiles(certDir); err != nil {
		return err
	}
	// The manager installs the CEL fence at every start (installCELFence).
	mutating, validating := syncer.Configurations(syncer.ConfigOptions{Name: WebhookConfigName, URL: baseURL, CABundle: bundle.CA, FencedByCEL: true})
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	if err := upsert(ctx, cs.AdmissionregistrationV1().MutatingWebhookConfigurations(), mutating); err != nil {
		return err
	}
	return upsert(ctx, cs.AdmissionregistrationV1().ValidatingWebhookConfigurations(), validating)
}

// clusterObjects is the part of a typed client of cluster-scoped objects that
// upsert needs.
type clusterObjects[T metav1.Object] interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (T, error)
	Create(ctx context.Context, obj T, opts metav1.CreateOptions) (T, error)
	Update(ctx context.Context, obj T, opts metav1.UpdateOptions) (T, error)
}

// upsert creates obj, or replaces the object of its name.
func upsert[T metav1.Object](ctx context.Context, api clusterObjects[T], obj T) error {
	old, err := api.Get(ctx, obj.GetName(), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		_, err = api.Create(ctx, obj, metav1.CreateOptions{})
		return err
	}
	if err != nil {
		return err
	}
	obj.SetResourceVersion(old.GetResourceVersion())
	_, err = api.Update(ctx, obj, metav1.UpdateOptions{})
	return err
}
