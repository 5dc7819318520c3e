package bench

import (
	"context"
	"fmt"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/gpuvc/gpuvc/api/contract"
	"github.com/gpuvc/gpuvc/e2e/testsupport/poll"
	"github.com/gpuvc/gpuvc/e2e/testsupport/testobj"
)

// overheadLabel marks the pods WebhookOverhead and Throughput create, so they
// delete only those.
const overheadLabel = "gpuvc.bench/overhead"

// WebhookSwitch turns gpuvc's pod webhook off and on for a namespace's pods by
// deleting and re-creating its two webhook configurations, so one namespace —
// same quota, same CEL fence, same pods — is measured with and without it.
type WebhookSwitch struct {
	c          kubernetes.Interface
	ns         string
	mutating   *admissionregistrationv1.MutatingWebhookConfiguration
	validating *admissionregistrationv1.ValidatingWebhookConfiguration
}

// NewWebhookSwitch remembers the configurations named name (both registered).
func NewWebhookSwitch(ctx context.Context, c kubernetes.Interface, name, ns string) (*WebhookSwitch, error) {
	m, err := c.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	v, err := c.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	return &WebhookSwitch{c: c, ns: ns, mutating: fresh(m), validating: fresh(v)}, nil
}

func fresh[T interface{ GetObjectMeta() metav1.Object }](o T) T {
	m := o.GetObjectMeta()
	m.SetResourceVersion("")
	m.SetUID("")
	m.SetCreationTimestamp(metav1.Time{})
	m.SetManagedFields(nil)
	m.SetGeneration(0)
	return o
}

// Off deletes the configurations and waits until the API server stops calling
// the webhook for the namespace.
func (s *WebhookSwitch) Off(ctx context.Context) error {
	api := s.c.AdmissionregistrationV1()
	if err := api.MutatingWebhookConfigurations().Delete(ctx, s.mutating.Name, metav1.DeleteOptions{}); err != nil {
		return err
	}
	if err := api.ValidatingWebhookConfigurations().Delete(ctx, s.validating.Name, metav1.DeleteOptions{}); err != nil {
		return err
	}
	return s.await(ctx, false)
}

// On re-creates the configurations and waits until the webhook mutates the
// namespace's pods again.
func (s *WebhookSwitch) On(ctx context.Context) error {
	api := s.c.AdmissionregistrationV1()
	if _, err := api.MutatingWebhookConfigurations().Create(ctx, s.mutating.DeepCopy(), metav1.CreateOptions{}); err != nil {
		return err
	}
	if _, err := api.ValidatingWebhookConfigurations().Create(ctx, s.validating.DeepCopy(), metav1.CreateOptions{}); err != nil {
		return err
	}
	return s.await(ctx, true)
}

// Template is a pod as the webhook admits it: a plain CPU pod, created as a
// dry run with the webhook on. Created with the webhook off it passes the same
// quota and CEL fence without calling the webhook.
func (s *WebhookSwitch) Template(ctx context.Context) (*corev1.Pod, error) {
	p, err := s.probe(ctx)
	if err != nil {
		return nil, err
	}
	if !pinned(p) {
		return nil, fmt.Errorf("the webhook did not pin the probe pod to a pool: nodeSelector %v", p.Spec.NodeSelector)
	}
	t := &corev1.Pod{Spec: *p.Spec.DeepCopy()}
	t.Labels, t.Annotations = p.Labels, p.Annotations
	if t.Labels == nil {
		t.Labels = map[string]string{}
	}
	t.Labels[overheadLabel] = "true"
	return t, nil
}

func (s *WebhookSwitch) probe(ctx context.Context) (*corev1.Pod, error) {
	return s.c.CoreV1().Pods(s.ns).Create(ctx, testobj.Pod("webhook-probe", s.ns).Obj(), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
}

// await polls dry-run creations until the webhook is (on) or is not called.
func (s *WebhookSwitch) await(ctx context.Context, on bool) error {
	var last error // the last probe error not caused by the deadline (poll.EndedBy)
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		p, err := s.probe(ctx)
		if err != nil && poll.EndedBy(ctx, err) {
			return false, nil
		}
		last = err
		return (err == nil && pinned(p)) == on, nil
	})
	if err != nil {
		return fmt.Errorf("webhook on=%v not in effect for namespace %s after a minute (last probe error: %v): %w", on, s.ns, last, err)
	}
	return nil
}

func pinned(p *corev1.Pod) bool { return p.Spec.NodeSelector[contract.LabelPool] != "" }
