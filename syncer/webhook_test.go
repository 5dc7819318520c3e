package syncer

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/gpuvc/gpuvc/api/contract"
	"github.com/gpuvc/gpuvc/syncer/migmap"
)

type staticPolicies map[string]*TeamPolicy

func (s staticPolicies) TeamPolicy(_ context.Context, ns string) (*TeamPolicy, error) {
	if ns == "broken" {
		return nil, errors.New("namespace broken is labelled for team x but gpuvc has no policy for it")
	}
	p, ok := s[ns]
	if !ok {
		return nil, ErrNotTeamNamespace
	}
	cp := *p
	return &cp, nil
}

type staticNodes map[string]string

func (n staticNodes) PoolOf(_ context.Context, node string) (string, error) { return n[node], nil }

type harness struct {
	w        *Webhook
	events   *events.FakeRecorder
	metrics  *Metrics
	tenant   string
	trusted  string
	registry *prometheus.Registry
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	h := &harness{
		events: events.NewFakeRecorder(100), registry: prometheus.NewRegistry(),
		tenant: "system:serviceaccount:team-fraud:vc-fraud", trusted: "system:serviceaccount:gpuvc-system:gpuvc-manager",
	}
	var err error
	if h.metrics, err = NewMetrics(h.registry); err != nil {
		t.Fatal(err)
	}
	h.w, err = New(Options{
		Policies: staticPolicies{"team-fraud": fraudPolicy()}, Nodes: staticNodes(knownNodes), MIG: migmap.Catalog{},
		Recorder: h.events, Metrics: h.metrics, TrustedUsers: []string{h.trusted},
	})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func raw(t testing.TB, obj runtime.Object) runtime.RawExtension {
	t.Helper()
	b, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	return runtime.RawExtension{Raw: b}
}

func (h *harness) request(t testing.TB, op admissionv1.Operation, p, old *corev1.Pod, user string) admission.Request {
	t.Helper()
	p.APIVersion, p.Kind = "v1", "Pod"
	req := admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		UID: "req-1", Kind: metav1.GroupVersionKind{Version: "v1", Kind: "Pod"},
		Resource: metav1.GroupVersionResource{Version: "v1", Resource: "pods"}, Namespace: p.Namespace, Name: p.Name,
		Operation: op, UserInfo: authenticationv1.UserInfo{Username: user}, Object: raw(t, p),
	}}
	if old != nil {
		old.APIVersion, old.Kind = "v1", "Pod"
		req.OldObject = raw(t, old)
	}
	return req
}

// mutate runs the mutating handler and returns the patched pod.
func (h *harness) mutate(t testing.TB, req admission.Request) (*corev1.Pod, admission.Response) {
	t.Helper()
	resp := h.w.Mutator().Handle(context.Background(), req)
	if !resp.Allowed {
		return nil, resp
	}
	b, err := json.Marshal(resp.Patches)
	if err != nil {
		t.Fatal(err)
	}
	patch, err := jsonpatch.DecodePatch(b)
	if err != nil {
		t.Fatal(err)
	}
	out, err := patch.Apply(req.Object.Raw)
	if err != nil {
		t.Fatalf("applying %s: %v", b, err)
	}
	var p corev1.Pod
	if err := json.Unmarshal(out, &p); err != nil {
		t.Fatal(err)
	}
	return &p, resp
}

func (h *harness) drainEvents() []string {
	var out []string
	for {
		select {
		case e := <-h.events.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

func TestHandlersCreateAdmitsAndExplains(t *testing.T) {
	h := newHarness(t)
	tenantPod := pod().GPUs("1").TolerateTaint(contract.LabelPool, "h100").Obj()
	got, resp := h.mutate(t, h.request(t, admissionv1.Create, tenantPod, nil, h.tenant))
	if !resp.Allowed {
		t.Fatalf("refused: %s", resp.Result.Message)
	}
	eq(t, "a100", got.Spec.NodeSelector[contract.LabelPool])
	if len(h.drainEvents()) != 0 {
		t.Error("the mutating webhook must leave events to the validating one (no UID yet)")
	}
	got.UID = "pod-uid"
	vresp := h.w.Validator().Handle(context.Background(), h.request(t, admissionv1.Create, got, nil, h.tenant))
	if !vresp.Allowed {
		t.Fatalf("validating webhook refuses the mutated pod: %s", vresp.Result.Message)
	}
	evs := strings.Join(h.drainEvents(), "\n")
	if !strings.Contains(evs, "Warning TolerationRemoved") {
		t.Errorf("events %q lack the removed toleration", evs)
	}
	// Pool pinning is the team's standing rule: in the annotation, no event.
	if strings.Contains(evs, ReasonPoolPinned) {
		t.Errorf("events %q include the routine %s", evs, ReasonPoolPinned)
	}
	if !strings.Contains(got.Annotations[contract.AnnotationDecisions], ReasonPoolPinned) {
		t.Errorf("decisions annotation %q lacks %s", got.Annotations[contract.AnnotationDecisions], ReasonPoolPinned)
	}
	eq(t, 1.0, testutil.ToFloat64(h.metrics.Requests.WithLabelValues("fraud", "mutate", "create", "patched")))
	eq(t, 1.0, testutil.ToFloat64(h.metrics.Requests.WithLabelValues("fraud", "validate", "create", "allowed")))
	eq(t, 1.0, testutil.ToFloat64(h.metrics.Decisions.WithLabelValues("fraud", "mutate", ReasonTolerationRemoved)))
	if n := testutil.CollectAndCount(h.metrics.Duration); n != 2 {
		t.Errorf("latency histogram has %d series, want 2", n)
	}
}

func TestHandlersRefuse(t *testing.T) {
	h := newHarness(t)
	resp := h.w.Mutator().Handle(context.Background(), h.request(t, admissionv1.Create, pod().GPUs("64").Obj(), nil, h.tenant))
	if resp.Allowed {
		t.Fatal("64 GPUs admitted")
	}
	if msg := resp.Result.Message; !strings.Contains(msg, "gpuvc: GPUCountAboveLimit:") || !strings.Contains(msg, "at most 4") {
		t.Errorf("message %q", msg)
	}
	if evs := h.drainEvents(); len(evs) != 1 || !strings.HasPrefix(evs[0], "Warning GPUCountAboveLimit") {
		t.Errorf("events %q", evs)
	}
	eq(t, 1.0, testutil.ToFloat64(h.metrics.Decisions.WithLabelValues("fraud", "mutate", ReasonGPUCountAboveLimit)))
}

func TestHandlersNamespaces(t *testing.T) {
	h := newHarness(t)
	other := podIn("p", "default")
	resp := h.w.Mutator().Handle(context.Background(), h.request(t, admissionv1.Create, other, nil, h.tenant))
	if !resp.Allowed || len(resp.Patches) != 0 {
		t.Errorf("pod outside team namespaces: allowed=%v patches=%v", resp.Allowed, resp.Patches)
	}
	broken := podIn("p", "broken")
	for _, handler := range []admission.Handler{h.w.Mutator(), h.w.Validator()} {
		resp = handler.Handle(context.Background(), h.request(t, admissionv1.Create, broken, nil, h.tenant))
		if resp.Allowed || !strings.Contains(resp.Result.Message, ReasonNoTeamPolicy) {
			t.Errorf("team namespace without policy: allowed=%v message=%q", resp.Allowed, resp.Result.Message)
		}
	}
}

func podIn(name, ns string) *corev1.Pod {
	p := pod().Obj()
	p.Name, p.Namespace = name, ns
	return p
}

func TestHandlersUpdateRestoresGate(t *testing.T) {
	h := newHarness(t)
	old := admitted(t, pod().GPUFraction("0.5").Obj())
	old.UID = "pod-uid"
	upd := old.DeepCopy()
	upd.Spec.SchedulingGates = nil
	upd.Labels["app"] = "v2"
	got, resp := h.mutate(t, h.request(t, admissionv1.Update, upd, old, h.tenant))
	if !resp.Allowed {
		t.Fatalf("update refused: %s", resp.Result.Message)
	}
	eq(t, 1, len(got.Spec.SchedulingGates))
	eq(t, "v2", got.Labels["app"])
	if evs := h.drainEvents(); len(evs) != 1 || !strings.HasPrefix(evs[0], "Warning GPUShareGateRestored") {
		t.Errorf("events %q", evs)
	}
	// The same removal by the share controller goes through, and the validating
	// webhook accepts it.
	got, _ = h.mutate(t, h.request(t, admissionv1.Update, upd, old, h.trusted))
	eq(t, 0, len(got.Spec.SchedulingGates))
	if v := h.w.Validator().Handle(context.Background(), h.request(t, admissionv1.Update, got, old, h.trusted)); !v.Allowed {
		t.Errorf("trusted ungating refused: %s", v.Result.Message)
	}
	// A tenant's removal that skipped the mutating webhook is refused.
	if v := h.w.Validator().Handle(context.Background(), h.request(t, admissionv1.Update, upd, old, h.tenant)); v.Allowed {
		t.Error("validating webhook let a tenant remove the gate")
	}
}

// An UPDATE the restorations turn into the stored pod (vCluster re-sending the
// tenant's gates and tolerations on every sync) is quiet: the pod is unchanged
// and so is what anyone was told. One that still changes the pod, or is
// refused, is explained.
func TestHandlersUpdateEventsOnlyOnChange(t *testing.T) {
	h := newHarness(t)
	old := admitted(t, pod().GPUFraction("0.5").TolerateEverything().Obj())
	old.UID, old.ResourceVersion = "pod-uid", "7"
	resend := old.DeepCopy()
	resend.Spec.SchedulingGates = nil
	resend.Spec.Tolerations = append(resend.Spec.Tolerations, corev1.Toleration{Operator: corev1.TolerationOpExists})
	resend.Status.Phase = corev1.PodPending // a PUT carries the sender's status; the API server keeps the stored one
	for round := range 3 {
		got, resp := h.mutate(t, h.request(t, admissionv1.Update, resend.DeepCopy(), old, h.tenant))
		if !resp.Allowed || len(got.Spec.SchedulingGates) != 1 {
			t.Fatalf("round %d: allowed=%v gates %v", round, resp.Allowed, got.Spec.SchedulingGates)
		}
		if evs := h.drainEvents(); len(evs) != 0 {
			t.Errorf("round %d: a no-op update recorded events %q", round, evs)
		}
	}
	changed := resend.DeepCopy()
	changed.Labels["app"] = "v2"
	if _, resp := h.mutate(t, h.request(t, admissionv1.Update, changed, old, h.tenant)); !resp.Allowed {
		t.Fatalf("update refused: %s", resp.Result.Message)
	}
	evs := h.drainEvents()
	if len(evs) != 2 || !strings.HasPrefix(evs[0], "Warning GPUShareGateRestored") || !strings.HasPrefix(evs[1], "Warning TolerationRemoved") {
		t.Errorf("update that changes the pod: events %q, want the gate restored and the toleration removed", evs)
	}
	refused := old.DeepCopy()
	refused.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
		NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: contract.LabelPool, Operator: corev1.NodeSelectorOpIn, Values: []string{"h100"}}}}},
	}}}
	if _, resp := h.mutate(t, h.request(t, admissionv1.Update, refused, old, h.tenant)); resp.Allowed {
		t.Fatal("affinity to h100 admitted")
	}
	if evs := h.drainEvents(); len(evs) != 1 || !strings.HasPrefix(evs[0], "Warning "+ReasonAffinityOutsidePool) {
		t.Errorf("refused update: events %q", evs)
	}
}

func TestHandlersEphemeralContainers(t *testing.T) {
	h := newHarness(t)
	old := admitted(t, pod().Obj())
	upd := old.DeepCopy()
	upd.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
		Name: "debug", Image: "busybox", SecurityContext: &corev1.SecurityContext{Privileged: ptr.To(true)},
	}}}
	req := h.request(t, admissionv1.Update, upd, old, h.tenant)
	req.SubResource = "ephemeralcontainers"
	resp := h.w.Validator().Handle(context.Background(), req)
	if resp.Allowed || !strings.Contains(resp.Result.Message, "spec.ephemeralContainers[0].securityContext.privileged=true") {
		t.Errorf("privileged debug container: allowed=%v message=%q", resp.Allowed, resp.Result.Message)
	}
}

func TestHandlersDryRunRecordsNoEvents(t *testing.T) {
	h := newHarness(t)
	req := h.request(t, admissionv1.Create, pod().GPUs("64").Obj(), nil, h.tenant)
	req.DryRun = ptr.To(true)
	if resp := h.w.Mutator().Handle(context.Background(), req); resp.Allowed {
		t.Fatal("dry run admitted 64 GPUs")
	}
	if evs := h.drainEvents(); len(evs) != 0 {
		t.Errorf("dry run recorded events %q", evs)
	}
}
