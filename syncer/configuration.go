package syncer

import (
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/gpuvc/gpuvc/api/contract"
)

// ConfigOptions say how the API server reaches the webhook.
type ConfigOptions struct {
	// Name of both configuration objects, e.g. "gpuvc-syncer".
	Name string
	// URL is the server's base URL (e.g. https://127.0.0.1:9443) for a webhook
	// outside the cluster; otherwise Service is used.
	URL     string
	Service *admissionregistrationv1.ServiceReference
	// CABundle is the PEM CA that signed the serving certificate.
	CABundle []byte
	// TimeoutSeconds defaults to 10.
	TimeoutSeconds int32
	// FencedByCEL says the CEL fence (syncer/celpolicy) guards the same
	// namespaces, as the manager installs it: the validating webhook then gets a
	// match condition that lets the API server skip it for a routine pod's
	// CREATE, whose every check the fence repeats (routinePodCondition). Leave
	// it false where the fence is not installed.
	FencedByCEL bool
}

// Configurations returns the webhook configurations that send pods of team
// namespaces (label gpuvc.dev/team) to the webhook. Both fail closed: if the
// webhook is down, team pods are refused rather than admitted unfenced.
func Configurations(o ConfigOptions) (*admissionregistrationv1.MutatingWebhookConfiguration, *admissionregistrationv1.ValidatingWebhookConfiguration) {
	timeout := o.TimeoutSeconds
	if timeout == 0 {
		timeout = 10
	}
	client := func(path string) admissionregistrationv1.WebhookClientConfig {
		cc := admissionregistrationv1.WebhookClientConfig{CABundle: o.CABundle}
		if o.URL != "" {
			cc.URL = ptr.To(o.URL + path)
		} else if o.Service != nil {
			svc := *o.Service
			svc.Path = ptr.To(path)
			cc.Service = &svc
		}
		return cc
	}
	teams := &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
		Key: contract.LabelTeam, Operator: metav1.LabelSelectorOpExists,
	}}}
	rule := func(resources ...string) []admissionregistrationv1.RuleWithOperations {
		return []admissionregistrationv1.RuleWithOperations{{
			Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
			Rule: admissionregistrationv1.Rule{
				APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: resources,
				Scope: ptr.To(admissionregistrationv1.NamespacedScope),
			},
		}}
	}
	// Events are side effects, but none on dry runs.
	sideEffects := ptr.To(admissionregistrationv1.SideEffectClassNoneOnDryRun)
	mutating := &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: o.Name},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{
			Name:                    "pods.mutate.gpuvc.dev",
			ClientConfig:            client(MutatePath),
			Rules:                   rule("pods", "pods/resize"),
			FailurePolicy:           ptr.To(admissionregistrationv1.Fail),
			MatchPolicy:             ptr.To(admissionregistrationv1.Equivalent),
			NamespaceSelector:       teams,
			SideEffects:             sideEffects,
			TimeoutSeconds:          ptr.To(timeout),
			AdmissionReviewVersions: []string{"v1"},
			// Re-run after later webhooks changed the pod (e.g. a sidecar
			// injector), so their containers get the share ConfigMap too.
			ReinvocationPolicy: ptr.To(admissionregistrationv1.IfNeededReinvocationPolicy),
		}},
	}
	validating := &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: o.Name},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name:                    "pods.validate.gpuvc.dev",
			ClientConfig:            client(ValidatePath),
			Rules:                   rule("pods", "pods/ephemeralcontainers"),
			FailurePolicy:           ptr.To(admissionregistrationv1.Fail),
			MatchPolicy:             ptr.To(admissionregistrationv1.Equivalent),
			NamespaceSelector:       teams,
			SideEffects:             sideEffects,
			TimeoutSeconds:          ptr.To(timeout),
			AdmissionReviewVersions: []string{"v1"},
			MatchConditions:         validateConditions(o.FencedByCEL),
		}, {
			// Dynamic Resource Allocation: what a team's claims and claim
			// templates ask for, and who writes a claim's allocation.
			Name:         "dra.validate.gpuvc.dev",
			ClientConfig: client(DRAPath),
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
				Rule: admissionregistrationv1.Rule{
					APIGroups: []string{"resource.k8s.io"}, APIVersions: []string{"v1"},
					Resources: []string{"resourceclaims", "resourceclaims/status", "resourceclaimtemplates"},
					Scope:     ptr.To(admissionregistrationv1.NamespacedScope),
				},
			}},
			FailurePolicy:           ptr.To(admissionregistrationv1.Fail),
			MatchPolicy:             ptr.To(admissionregistrationv1.Equivalent),
			NamespaceSelector:       teams,
			SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
			TimeoutSeconds:          ptr.To(timeout),
			AdmissionReviewVersions: []string{"v1"},
		}},
	}
	return mutating, validating
}

// validateConditions are the pod validating webhook's match conditions.
func validateConditions(fencedByCEL bool) []admissionregistrationv1.MatchCondition {
	if !fencedByCEL {
		return nil
	}
	return []admissionregistrationv1.MatchCondition{routinePodCondition()}
}
