package manager

import (
	"context"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"
)

// upsert creates a webhook configuration, and on the next start of a local
// manager replaces it (a new URL and CA) rather than failing on AlreadyExists.
func TestUpsertCreatesThenReplaces(t *testing.T) {
	ctx := context.Background()
	api := fake.NewClientset().AdmissionregistrationV1().ValidatingWebhookConfigurations()
	config := func(url string) *admissionregistrationv1.ValidatingWebhookConfiguration {
		return &admissionregistrationv1.ValidatingWebhookConfiguration{
			ObjectMeta: metav1.ObjectMeta{Name: WebhookConfigName},
			Webhooks:   []admissionregistrationv1.ValidatingWebhook{{Name: "pods.gpuvc.dev", ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: ptr.To(url)}}},
		}
	}

	for _, url := range []string{"https://127.0.0.1:9443/validate", "https://127.0.0.1:9555/validate"} {
		if err := upsert(ctx, api, config(url)); err != nil {
			t.Fatalf("upsert %s: %v", url, err)
		}
		got, err := api.Get(ctx, WebhookConfigName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if u := *got.Webhooks[0].ClientConfig.URL; u != url {
			t.Errorf("registered URL %s, want %s", u, url)
		}
	}
}
