package charts

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"

	"github.com/gpuvc/gpuvc/syncer"
)

// TestWebhookConfigurationsMatchSyncer: the chart's configurations are exactly what
// syncer.Configurations builds for the webhook Service (names, rules, paths,
// namespaceSelector on gpuvc.dev/team, failurePolicy Fail, side effects,
// reinvocation), apart from metadata and the caBundle, which cert-manager or the
// manager's rotator fill in.
func TestWebhookConfigurationsMatchSyncer(t *testing.T) {
	for name, timeout := range map[string]int32{"defaults": 10, "everything set": 5, "self-managed certificates": 10} {
		t.Run(name, func(t *testing.T) {
			m := mustRender(t, valueSets[name])
			wantM, wantV := syncer.Configurations(syncer.ConfigOptions{
				Name: WebhookConfigurationName,
				Service: &admissionregistrationv1.ServiceReference{
					Namespace: testNamespace, Name: WebhookServiceName, Port: ptr.To[int32](443),
				},
				TimeoutSeconds: timeout,
				FencedByCEL:    true, // the manager installs the CEL fence
			})
			gotM := get[admissionregistrationv1.MutatingWebhookConfiguration](t, m, "MutatingWebhookConfiguration", WebhookConfigurationName)
			gotV := get[admissionregistrationv1.ValidatingWebhookConfiguration](t, m, "ValidatingWebhookConfiguration", WebhookConfigurationName)
			ignoreMeta := cmpopts.IgnoreFields(metav1.ObjectMeta{}, "Labels", "Annotations")
			if diff := cmp.Diff(wantM, gotM, ignoreMeta, cmpopts.IgnoreTypes(metav1.TypeMeta{})); diff != "" {
				t.Errorf("MutatingWebhookConfiguration (-syncer.Configurations +chart):\n%s", diff)
			}
			if diff := cmp.Diff(wantV, gotV, ignoreMeta, cmpopts.IgnoreTypes(metav1.TypeMeta{})); diff != "" {
				t.Errorf("ValidatingWebhookConfiguration (-syncer.Configurations +chart):\n%s", diff)
			}
			// The paths the manager's webhook server serves.
			if p := *gotM.Webhooks[0].ClientConfig.Service.Path; p != syncer.MutatePath {
				t.Errorf("mutating path %s, want %s", p, syncer.MutatePath)
			}
			if p := *gotV.Webhooks[0].ClientConfig.Service.Path; p != syncer.ValidatePath {
				t.Errorf("validating path %s, want %s", p, syncer.ValidatePath)
			}
		})
	}
}

// TestCertificates: with cert-manager, a Certificate for the webhook Service's DNS
// names writes the Secret the manager mounts, and cainjector is asked to fill both
// caBundles; without it, the chart creates the Secret for the manager's rotator and
// nothing of cert-manager.
func TestCertificates(t *testing.T) {
	svcDNS := []any{"gpuvc-webhook.gpuvc-system.svc", "gpuvc-webhook.gpuvc-system.svc.cluster.local"}
	cases := map[string]struct {
		certManager bool
		issuer      map[string]any // the Certificate's issuerRef
		ownIssuer   bool
	}{
		"defaults": {certManager: true, ownIssuer: true,
			issuer: map[string]any{"name": "gpuvc-selfsigned", "kind": "Issuer", "group": "cert-manager.io"}},
		"existing cluster issuer": {certManager: true,
			issuer: map[string]any{"name": "corp-ca", "kind": "ClusterIssuer", "group": "cert-manager.io"}},
		"self-managed certificates": {},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			m := mustRender(t, valueSets[name])
			for _, kind := range []string{"MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"} {
				ann := m.find(kind, WebhookConfigurationName).GetAnnotations()["cert-manager.io/inject-ca-from"]
				want := ""
				if tc.certManager {
					want = testNamespace + "/gpuvc-webhook"
				}
				if ann != want {
					t.Errorf("%s inject-ca-from %q, want %q", kind, ann, want)
				}
			}
			cert := m.find("Certificate", "gpuvc-webhook")
			if (cert != nil) != tc.certManager {
				t.Fatalf("Certificate rendered: %v, want %v", cert != nil, tc.certManager)
			}
			if (m.find("Issuer", "gpuvc-selfsigned") != nil) != tc.ownIssuer {
				t.Errorf("self-signed Issuer rendered: %v, want %v", !tc.ownIssuer, tc.ownIssuer)
			}
			secret := m.find("Secret", WebhookSecretName)
			if tc.certManager {
				if secret != nil {
					t.Error("the chart renders the Secret cert-manager owns")
				}
				spec := cert.Object["spec"].(map[string]any)
				if spec["secretName"] != WebhookSecretName {
					t.Errorf("certificate secretName %v, want %s", spec["secretName"], WebhookSecretName)
				}
				if diff := cmp.Diff(svcDNS, spec["dnsNames"]); diff != "" {
					t.Errorf("certificate dnsNames (-want +got):\n%s", diff)
				}
				if diff := cmp.Diff(tc.issuer, spec["issuerRef"]); diff != "" {
					t.Errorf("certificate issuerRef (-want +got):\n%s", diff)
				}
				if dur, _, _ := unstructured.NestedString(cert.Object, "spec", "duration"); dur != "2160h" {
					t.Errorf("duration %q", dur)
				}
				return
			}
			s := get[corev1.Secret](t, m, "Secret", WebhookSecretName)
			if len(s.Data) != 0 || len(s.StringData) != 0 || s.Type != corev1.SecretTypeOpaque {
				t.Errorf("rotator Secret %+v: want an empty Opaque Secret for the rotator to fill", s)
			}
		})
	}
}
