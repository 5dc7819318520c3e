package celpolicy_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/gpuvc/gpuvc/api/contract"
	"github.com/gpuvc/gpuvc/e2e/testsupport/poll"
	"github.com/gpuvc/gpuvc/e2e/testsupport/testobj"
	"github.com/gpuvc/gpuvc/syncer"
)

// The layered namespace's validating webhook carries the routine-pod match
// condition (ConfigOptions.FencedByCEL, as the manager registers it): the API
// server skips the call for a routine pod's CREATE and leaves its checks to
// the CEL fence. These tests count the calls, and try to smuggle a pod past
// the skipped call with a mutating webhook that runs after gpuvc's and makes
// the pod look routine again (it rewrites gpuvc's decisions to the pool
// pinning alone) while undoing part of the fence.

// laterPath serves the mutating webhook that runs after gpuvc's.
const laterPath = "/test/later"

// laterLabel on a pod names what the later webhook does to it (laterEdits).
const laterLabel = "celpolicy.test/later"

// routineDecisions is what gpuvc's mutating webhook records for a pod whose
// only decision is the pool pinning.
var routineDecisions = fmt.Sprintf(`[{"type":"Normal","reason":"PoolPinned","message":"pinned to node pool %s: added nodeSelector gpuvc.dev/pool=%s"}]`, pool, pool)

// laterEdits are what the later webhook does, by the pod's laterLabel.
var laterEdits = map[string]func(*corev1.Pod){
	"foreign-toleration": func(p *corev1.Pod) {
		p.Spec.Tolerations = append(p.Spec.Tolerations, corev1.Toleration{Key: contract.LabelPool, Operator: corev1.TolerationOpEqual, Value: "h100", Effect: corev1.TaintEffectNoSchedule})
	},
	"scheduler": func(p *corev1.Pod) { p.Spec.SchedulerName = "my-scheduler" },
	"kai-queue": func(p *corev1.Pod) { p.Labels[contract.LabelKAIQueue] = "other-queue" },
	"gpus":      func(p *corev1.Pod) { setLimit(p, contract.ResourceGPU, "8") },
	"no-team-label": func(p *corev1.Pod) {
		delete(p.Labels, contract.LabelTeam)
	},
	"no-pool-toleration": func(p *corev1.Pod) {
		var kept []corev1.Toleration
		for _, t := range p.Spec.Tolerations {
			if t.Key != contract.LabelPool {
				kept = append(kept, t)
			}
		}
		p.Spec.Tolerations = kept
	},
	"envfrom-devices": func(p *corev1.Pod) {
		p.Spec.Containers[0].EnvFrom = []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: devicesConfigMap}}}}
	},
	"node-name-affinity": func(p *corev1.Pod) {
		p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{"h100-0"}}}}},
		}}}
	},
}

func setLimit(p *corev1.Pod, name corev1.ResourceName, qty string) {
	ctr := &p.Spec.Containers[0]
	if ctr.Resources.Limits == nil {
		ctr.Resources.Limits = corev1.ResourceList{}
	}
	if ctr.Resources.Requests == nil {
		ctr.Resources.Requests = corev1.ResourceList{}
	}
	ctr.Resources.Limits[name] = resource.MustParse(qty)
	ctr.Resources.Requests[name] = resource.MustParse(qty)
}

// laterWebhook applies laterEdits and then rewrites gpuvc's decisions as
// routine, hiding any decision gpuvc's reinvoked webhook recorded.
type laterWebhook struct{}

func (laterWebhook) Handle(_ context.Context, req admission.Request) admission.Response {
	var pod corev1.Pod
	if err := json.Unmarshal(req.Object.Raw, &pod); err != nil {
		return admission.Errored(400, err)
	}
	edit, ok := laterEdits[pod.Labels[laterLabel]]
	if !ok {
		return admission.Allowed("")
	}
	edit(&pod)
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Annotations[contract.AnnotationDecisions] = routineDecisions
	b, err := json.Marshal(&pod)
	if err != nil {
		return admission.Errored(500, err)
	}
	return admission.PatchResponseFromRaw(req.Object.Raw, b)
}

// registerLater registers the later webhook (its name sorts after gpuvc's
// configuration, and it is reinvoked as gpuvc's is) for pods with laterLabel.
func registerLater(ctx context.Context, t *testing.T, baseURL string, ca []byte) {
	t.Helper()
	mutating, _ := syncer.Configurations(syncer.ConfigOptions{Name: "zz-celpolicy-test-later", URL: baseURL, CABundle: ca})
	wh := &mutating.Webhooks[0]
	wh.Name = "later.celpolicy.test"
	wh.ClientConfig.URL = ptr.To(baseURL + laterPath)
	wh.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{layeredLabel: "on"}}
	wh.ObjectSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: laterLabel, Operator: metav1.LabelSelectorOpExists}}}
	api := env.cp.Client.AdmissionregistrationV1().MutatingWebhookConfigurations()
	if _, err := api.Create(ctx, mutating, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = api.Delete(context.Background(), mutating.Name, metav1.DeleteOptions{}) })
	probe := testobj.Pod("later-probe", layeredNS).Label(laterLabel, "scheduler").Obj()
	poll.Until(ctx, t, time.Minute, "the later webhook is called", func(ctx context.Context) (bool, error) {
		_, err := env.cp.Client.CoreV1().Pods(layeredNS).Create(ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err != nil && strings.Contains(err.Error(), "SchedulerNotAllowed"), nil
	})
}

// routinePodsSkipTheValidatingWebhook (TestWithWebhook): a routine pod's
// CREATE is admitted without a call to the validating webhook; a pod with a
// decision worth an event, a GPU, an envFrom or a node-name affinity is still
// sent to it.
func routinePodsSkipTheValidatingWebhook(ctx context.Context, t *testing.T, hook layeredHook) {
	pods := env.cp.Client.CoreV1().Pods(layeredNS)
	for name, tc := range map[string]struct {
		pod    *testobj.PodWrapper
		called bool
	}{
		"CPU pod":                                 {pod: testobj.Pod("routine-cpu", layeredNS)},
		"CPU pod with an init container":          {pod: testobj.Pod("routine-init", layeredNS).InitContainer("warmup")},
		"CPU pod with the pool toleration":        {pod: testobj.Pod("routine-tol", layeredNS).Toleration(corev1.Toleration{Key: contract.LabelPool, Operator: corev1.TolerationOpEqual, Value: pool, Effect: corev1.TaintEffectNoSchedule})},
		"wildcard toleration (removed: an event)": {pod: testobj.Pod("called-wildcard", layeredNS).TolerateEverything(), called: true},
		"GPU pod":                   {pod: testobj.Pod("called-gpu", layeredNS).GPUs("1"), called: true},
		"GPU in an init container":  {pod: testobj.Pod("called-init-gpu", layeredNS).InitContainer("warmup").LimitOn("warmup", contract.ResourceGPU, "1"), called: true},
		"share pod":                 {pod: testobj.Pod("called-share", layeredNS).GPUFraction("0.5"), called: true},
		"envFrom a plain ConfigMap": {pod: testobj.Pod("called-envfrom", layeredNS).EnvFromConfigMap("plain"), called: true},
		"node affinity by node name": {pod: testobj.Pod("called-fields", layeredNS).Edit(laterEdits["node-name-affinity"]).Edit(func(p *corev1.Pod) {
			p.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0].MatchFields[0].Values = []string{"a100-0"}
		}), called: true},
	} {
		t.Run(name, func(t *testing.T) {
			before := hook.validated()
			created, err := pods.Create(ctx, tc.pod.Obj(), metav1.CreateOptions{})
			if err != nil {
				t.Fatalf("refused with both layers on: %v", err)
			}
			deleteAtEnd(t, layeredNS, created.Name)
			if got := hook.validated() - before; (got > 0) != tc.called {
				t.Errorf("validating webhook called %v times for the CREATE; want called=%v (decisions %s)", got, tc.called, created.Annotations[contract.AnnotationDecisions])
			}
		})
	}
}

// routinePodsCannotBeSmuggled (TestWithWebhook): a mutating webhook after
// gpuvc's undoes part of the fence and makes the pod's decisions look routine;
// the pod is refused — by the CEL fence where the pod still looks routine, by
// gpuvc's webhooks (its reinvoked mutating call, or the validating call the pod
// no longer skips) otherwise.
func routinePodsCannotBeSmuggled(ctx context.Context, t *testing.T, hook layeredHook) {
	registerLater(ctx, t, hook.url, hook.ca)
	pods := env.cp.Client.CoreV1().Pods(layeredNS)
	for mode, want := range map[string]struct {
		by      string // "fence" or "webhook"
		reasons []string
	}{
		"foreign-toleration": {"fence", []string{fenceReason("TolerationOutsidePool")}},
		"scheduler":          {"fence", []string{fenceReason("SchedulerNotAllowed")}},
		"kai-queue":          {"fence", []string{fenceReason("QueueNotAllowed")}},
		"gpus":               {"webhook", []string{syncer.ReasonGPUCountAboveLimit}},
		"no-team-label":      {"webhook", []string{syncer.ReasonNotAsAdmitted}},
		"no-pool-toleration": {"webhook", []string{syncer.ReasonNotAsAdmitted}},
		"envfrom-devices":    {"webhook", []string{syncer.ReasonGPUEnvFrom}},
		"node-name-affinity": {"webhook", []string{syncer.ReasonAffinityOutsidePool}},
	} {
		t.Run(mode, func(t *testing.T) {
			pod := testobj.Pod("later-"+mode, layeredNS).Label(laterLabel, mode).Obj()
			created, err := pods.Create(ctx, pod, metav1.CreateOptions{})
			if err == nil {
				deleteAtEnd(t, layeredNS, created.Name)
				t.Fatalf("admitted as %+v; want refused by the %s", created, want.by)
			}
			msg := err.Error()
			t.Logf("refusal: %s", msg)
			switch want.by {
			case "fence":
				if !strings.Contains(msg, policyRefusal) {
					t.Errorf("refused, but not by the CEL fence")
				}
			default:
				if !strings.Contains(msg, `admission webhook "pods.`) || !strings.Contains(msg, ".gpuvc.dev\" denied the request") {
					t.Errorf("refused, but not by gpuvc's webhooks")
				}
			}
			for _, r := range want.reasons {
				if !strings.Contains(msg, r) {
					t.Errorf("refusal lacks %q", r)
				}
			}
		})
	}
}

// fenceReason is a fence reason as its refusals spell it.
func fenceReason(reason string) string { return "gpuvc: " + reason + ":" }

// layeredHook is the webhook startLayered serves, and its call counts.
type layeredHook struct {
	url     string
	ca      []byte
	metrics *syncer.Metrics
}

// validated is how many pod CREATEs the validating webhook has answered.
func (h layeredHook) validated() float64 {
	var n float64
	for _, result := range []string{"allowed", "denied"} {
		n += testutil.ToFloat64(h.metrics.Requests.WithLabelValues(layeredTeam, "validate", "create", result))
	}
	return n
}
