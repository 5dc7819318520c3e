package integration

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/gpuvc/gpuvc/api/contract"
	"github.com/gpuvc/gpuvc/e2e/testsupport/poll"
	"github.com/gpuvc/gpuvc/syncer"
)

func counter(c prometheus.Collector) float64 { return testutil.ToFloat64(c) }

// create creates a tenant pod through the team's source and deletes it after the
// test.
func create(ctx context.Context, t *testing.T, team string, virtual *corev1.Pod) (*corev1.Pod, error) {
	t.Helper()
	src := env.sources[team]
	pod, err := src.Create(ctx, virtual)
	if err == nil {
		t.Cleanup(func() { deletePod(src.HostNamespace(), pod.Name) })
	}
	return pod, err
}

func deletePod(ns, name string) {
	_ = env.cp.Client.CoreV1().Pods(ns).Delete(context.Background(), name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
}

func running(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning }

func schedulingGated(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Reason == corev1.PodReasonSchedulingGated {
			return true
		}
	}
	return false
}

// waitForEvent polls for an event with reason on the object with uid.
func waitForEvent(ctx context.Context, t *testing.T, ns string, uid string, reason string) *corev1.Event {
	t.Helper()
	var found *corev1.Event
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		list, err := env.cp.Client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{
			FieldSelector: fields.AndSelectors(fields.OneTermEqualSelector("involvedObject.uid", uid), fields.OneTermEqualSelector("reason", reason)).String(),
		})
		if err != nil {
			return false, err
		}
		if len(list.Items) > 0 {
			found = &list.Items[0]
			return true, nil
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("no %s event on %s/%s: %v", reason, ns, uid, err)
	}
	return found
}

// refusedBy asserts err is a refusal by the named webhook that mentions every
// word.
func refusedBy(t *testing.T, err error, webhook string, words ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("admitted; want a refusal by %s mentioning %q", webhook, words)
	}
	msg := err.Error()
	if !apierrors.IsForbidden(err) && !apierrors.IsInvalid(err) && !strings.Contains(msg, "denied the request") {
		t.Fatalf("not an admission refusal: %v", err)
	}
	if prefix := `admission webhook "` + webhook + `" denied the request`; !strings.Contains(msg, prefix) {
		t.Fatalf("refused, but not by %s: %v", webhook, err)
	}
	for _, w := range words {
		if !strings.Contains(msg, w) {
			t.Errorf("refusal %q does not mention %q", msg, w)
		}
	}
}

// decisionReasons reads the reasons the mutating webhook recorded on a pod.
func decisionReasons(t *testing.T, p *corev1.Pod) []string {
	t.Helper()
	var notes []syncer.Note
	if s, ok := p.Annotations[contract.AnnotationDecisions]; ok {
		if err := json.Unmarshal([]byte(s), &notes); err != nil {
			t.Fatalf("decisions annotation %q: %v", s, err)
		}
	}
	var out []string
	for _, n := range notes {
		out = append(out, n.Reason)
	}
	return out
}

func hasGPUResources(p *corev1.Pod) bool {
	for _, c := range append(p.Spec.InitContainers, p.Spec.Containers...) {
		for _, l := range []corev1.ResourceList{c.Resources.Limits, c.Resources.Requests} {
			for name := range l {
				if strings.HasPrefix(string(name), "nvidia.com/") {
					return true
				}
			}
		}
	}
	return false
}

func hasGate(p *corev1.Pod) bool {
	for _, g := range p.Spec.SchedulingGates {
		if g.Name == contract.GateGPUShare {
			return true
		}
	}
	return false
}

// evilHandler is a mutating webhook registered after gpuvc's that undoes part of
// the fence on pods labelled test.gpuvc.dev/evil: the validating webhook must
// catch it.
type evilHandler struct{}

func (evilHandler) Handle(_ context.Context, req admission.Request) admission.Response {
	var pod corev1.Pod
	if err := json.Unmarshal(req.Object.Raw, &pod); err != nil {
		return admission.Errored(400, err)
	}
	evil := corev1.Toleration{Key: contract.LabelPool, Operator: corev1.TolerationOpEqual, Value: "h100", Effect: corev1.TaintEffectNoSchedule}
	if slices.Contains(pod.Spec.Tolerations, evil) {
		return admission.Allowed("")
	}
	pod.Spec.Tolerations = append(pod.Spec.Tolerations, evil)
	b, err := json.Marshal(&pod)
	if err != nil {
		return admission.Errored(500, err)
	}
	return admission.PatchResponseFromRaw(req.Object.Raw, b)
}

// waitUntil polls cond for up to 30 seconds.
func waitUntil(ctx context.Context, t *testing.T, what string, cond func(context.Context) bool) {
	t.Helper()
	poll.Until(ctx, t, 30*time.Second, what, func(ctx context.Context) (bool, error) { return cond(ctx), nil })
}
