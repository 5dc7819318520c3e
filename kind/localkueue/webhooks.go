package localkueue

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/gpuvc/gpuvc/api/contract"
)

// Names of the webhook configurations the local runner registers.
const (
	MutatingConfigName   = "kueue-mutating-webhook-configuration"
	ValidatingConfigName = "kueue-validating-webhook-configuration"
)

// webhookConfigurations reads Kueue's webhook configurations from
// configDir/webhook/manifests.yaml and keeps the webhooks of what the local Kueue
// runs (its own kinds and plain Pods; the other integrations are off), called at
// webhookURL+path and trusting caBundle. Pods reach Kueue only when they carry
// contract.LabelKueueQueueName and live outside kube-system and Kueue's namespace, so pods
// that never asked for a queue do not depend on Kueue being up.
func webhookConfigurations(configDir, webhookURL string, caBundle []byte, namespace string) (*admissionregistrationv1.MutatingWebhookConfiguration, *admissionregistrationv1.ValidatingWebhookConfiguration, error) {
	path := filepath.Join(configDir, "webhook", "manifests.yaml")
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	mutating := &admissionregistrationv1.MutatingWebhookConfiguration{}
	validating := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	for _, doc := range bytes.Split(b, []byte("\n---")) {
		var meta metav1.TypeMeta
		if err := yaml.Unmarshal(doc, &meta); err != nil {
			return nil, nil, fmt.Errorf("reading %s: %w", path, err)
		}
		switch meta.Kind {
		case "MutatingWebhookConfiguration":
			err = yaml.Unmarshal(doc, mutating)
		case "ValidatingWebhookConfiguration":
			err = yaml.Unmarshal(doc, validating)
		}
		if err != nil {
			return nil, nil, fmt.Errorf("reading %s: %w", path, err)
		}
	}
	if len(mutating.Webhooks) == 0 || len(validating.Webhooks) == 0 {
		return nil, nil, fmt.Errorf("%s holds no mutating or no validating webhooks", path)
	}
	mutating.Name, validating.Name = MutatingConfigName, ValidatingConfigName
	target := func(cc *admissionregistrationv1.WebhookClientConfig, rules []admissionregistrationv1.RuleWithOperations, nsSel, objSel **metav1.LabelSelector) bool {
		kind := servedKind(rules)
		if kind == "" {
			return false
		}
		path := ""
		if cc.Service != nil {
			path = ptr.Deref(cc.Service.Path, "")
		}
		url := webhookURL + path
		*cc = admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: caBundle}
		if kind == "pods" {
			*nsSel = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
				Key: "kubernetes.io/metadata.name", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"kube-system", namespace},
			}}}
			*objSel = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
				Key: contract.LabelKueueQueueName, Operator: metav1.LabelSelectorOpExists,
			}}}
		}
		return true
	}
	var ms []admissionregistrationv1.MutatingWebhook
	for _, w := range mutating.Webhooks {
		if target(&w.ClientConfig, w.Rules, &w.NamespaceSelector, &w.ObjectSelector) {
			ms = append(ms, w)
		}
	}
	var vs []admissionregistrationv1.ValidatingWebhook
	for _, w := range validating.Webhooks {
		if target(&w.ClientConfig, w.Rules, &w.NamespaceSelector, &w.ObjectSelector) {
			vs = append(vs, w)
		}
	}
	mutating.Webhooks, validating.Webhooks = ms, vs
	return mutating, validating, nil
}

// servedKind is "pods" for a plain-Pod webhook, "kueue" for one of Kueue's own
// kinds, "" for an integration the local Kueue does not run.
func servedKind(rules []admissionregistrationv1.RuleWithOperations) string {
	for _, r := range rules {
		if slices.Contains(r.APIGroups, "kueue.x-k8s.io") {
			return "kueue"
		}
		if slices.Contains(r.APIGroups, "") && slices.Contains(r.Resources, "pods") {
			return "pods"
		}
	}
	return ""
}

// applyWebhookConfigurations creates or replaces both configurations.
func applyWebhookConfigurations(ctx context.Context, cs kubernetes.Interface, m *admissionregistrationv1.MutatingWebhookConfiguration, v *admissionregistrationv1.ValidatingWebhookConfiguration) error {
	mapi := cs.AdmissionregistrationV1().MutatingWebhookConfigurations()
	if old, err := mapi.Get(ctx, m.Name, metav1.GetOptions{}); err == nil {
		m.ResourceVersion = old.ResourceVersion
		_, err = mapi.Update(ctx, m, metav1.UpdateOptions{})
		if err != nil {
			return err
		}
	} else if !apierrors.IsNotFound(err) {
		return err
	} else if _, err := mapi.Create(ctx, m, metav1.CreateOptions{}); err != nil {
		return err
	}
	vapi := cs.AdmissionregistrationV1().ValidatingWebhookConfigurations()
	if old, err := vapi.Get(ctx, v.Name, metav1.GetOptions{}); err == nil {
		v.ResourceVersion = old.ResourceVersion
		_, err = vapi.Update(ctx, v, metav1.UpdateOptions{})
		return err
	} else if !apierrors.IsNotFound(err) {
		return err
	}
	_, err := vapi.Create(ctx, v, metav1.CreateOptions{})
	return err
}
