package syncer

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/gpuvc/gpuvc/api/contract"
	"github.com/gpuvc/gpuvc/syncer/migmap"
)

// syncedPod is a pod as the API server hands a team's pod to the webhook: synced
// by vCluster (its labels and annotations), defaulted (pull policy, termination
// message, DNS, restart policy, the service-account token volume, the
// not-ready/unreachable tolerations), with a GPU request.
func syncedPod(name string) *corev1.Pod {
	p := pod().GPUs("1").Obj()
	p.APIVersion, p.Kind = "v1", "Pod"
	p.Name = name
	p.Labels = map[string]string{"app": "trainer", "vcluster.loft.sh/managed-by": "fraud", "vcluster.loft.sh/namespace": "default"}
	p.Annotations = map[string]string{
		"vcluster.loft.sh/object-name": name, "vcluster.loft.sh/object-namespace": "default",
		"vcluster.loft.sh/object-kind": "/v1, Kind=Pod", "vcluster.loft.sh/object-uid": "6a1c3bc7-8c52-4b8f-9d3e-0d1f1f0e3c11",
	}
	c := &p.Spec.Containers[0]
	c.Command = []string{"python", "train.py", "--epochs", "10"}
	c.Env = []corev1.EnvVar{{Name: "BATCH", Value: "64"}, {Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.name"}}}}
	c.Resources.Requests[corev1.ResourceCPU] = resource.MustParse("2")
	c.Resources.Requests[corev1.ResourceMemory] = resource.MustParse("8Gi")
	c.VolumeMounts = []corev1.VolumeMount{{Name: "kube-api-access-x7k2p", MountPath: "/var/run/secrets/kubernetes.io/serviceaccount", ReadOnly: true}}
	c.TerminationMessagePath, c.TerminationMessagePolicy = "/dev/termination-log", corev1.TerminationMessageReadFile
	c.ImagePullPolicy = corev1.PullIfNotPresent
	p.Spec.Volumes = []corev1.Volume{{Name: "kube-api-access-x7k2p", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
		DefaultMode: ptr.To[int32](420),
		Sources: []corev1.VolumeProjection{
			{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: ptr.To[int64](3607)}},
			{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"}, Items: []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
		},
	}}}}
	p.Spec.RestartPolicy, p.Spec.DNSPolicy = corev1.RestartPolicyNever, corev1.DNSClusterFirst
	p.Spec.ServiceAccountName, p.Spec.SchedulerName = "default", corev1.DefaultSchedulerName
	p.Spec.TerminationGracePeriodSeconds = ptr.To[int64](30)
	p.Spec.EnableServiceLinks, p.Spec.Priority = ptr.To(false), ptr.To[int32](0)
	p.Spec.SecurityContext = &corev1.PodSecurityContext{}
	p.Spec.Tolerations = []corev1.Toleration{
		{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](300)},
		{Key: "node.kubernetes.io/unreachable", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](300)},
	}
	return p
}

// reviewBody is the AdmissionReview the API server posts for a CREATE of p.
func reviewBody(b *testing.B, p *corev1.Pod, user string) []byte {
	raw, err := json.Marshal(p)
	if err != nil {
		b.Fatal(err)
	}
	review := admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{
			UID: "0b6f6a55-3e0e-4b8e-9d6a-1f0c2b7e5d01", Kind: metav1.GroupVersionKind{Version: "v1", Kind: "Pod"},
			Resource:        metav1.GroupVersionResource{Version: "v1", Resource: "pods"},
			RequestKind:     &metav1.GroupVersionKind{Version: "v1", Kind: "Pod"},
			RequestResource: &metav1.GroupVersionResource{Version: "v1", Resource: "pods"},
			Namespace:       p.Namespace, Name: p.Name, Operation: admissionv1.Create,
			UserInfo: authenticationv1.UserInfo{Username: user, Groups: []string{"system:serviceaccounts", "system:serviceaccounts:team-fraud", "system:authenticated"}},
			Object:   runtime.RawExtension{Raw: raw},
			DryRun:   ptr.To(false),
			Options:  runtime.RawExtension{Raw: []byte(`{"kind":"CreateOptions","apiVersion":"meta.k8s.io/v1"}`)},
		},
	}
	body, err := json.Marshal(review)
	if err != nil {
		b.Fatal(err)
	}
	return body
}

// discard is an event recorder that drops events: the benchmark measures the
// handler, not the event pipeline.
type discard struct{}

func (discard) Eventf(runtime.Object, runtime.Object, string, string, string, string, ...any) {}

var _ events.EventRecorder = discard{}

// BenchmarkWebhookHTTP is the manager's cost of one admission request, as the
// API server makes it (HTTP body in, AdmissionReview out: Register's handlers)
// without the network:
// the mutating call on a tenant's pod, the validating call on the pod it
// admitted. The policy lookup is a map (the manager's reads its cache).
func BenchmarkWebhookHTTP(b *testing.B) {
	const tenant = "system:serviceaccount:team-fraud:vc-fraud"
	w, err := New(Options{
		Policies: staticPolicies{"team-fraud": fraudPolicy()}, Nodes: staticNodes(knownNodes), MIG: migmap.Catalog{},
		Recorder: discard{}, TrustedUsers: []string{"system:serviceaccount:gpuvc-system:gpuvc-manager"},
	})
	if err != nil {
		b.Fatal(err)
	}
	mutating, validating := w.HTTPHandlers()
	tenantPod := syncedPod("trainer-0")
	mutateBody := reviewBody(b, tenantPod, tenant)
	// The pod as stored: the mutating call's patch applied.
	h := &harness{w: w}
	req := h.request(b, admissionv1.Create, tenantPod.DeepCopy(), nil, tenant)
	admitted, resp := h.mutate(b, req)
	if !resp.Allowed {
		b.Fatalf("the benchmark pod is refused: %s", resp.Result.Message)
	}
	admitted.UID = "5d3f3a0e-7b0e-4c55-a7a6-0c9d1c2e4f10"
	validateBody := reviewBody(b, admitted, tenant)
	if admitted.Labels[contract.LabelTeam] != "fraud" {
		b.Fatalf("the admitted pod lacks the team label: %v", admitted.Labels)
	}
	for _, bc := range []struct {
		name string
		h    http.Handler
		body []byte
	}{{"mutate", mutating, mutateBody}, {"validate", validating, validateBody}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				r := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(bc.body))
				r.Header.Set("Content-Type", "application/json")
				rec := httptest.NewRecorder()
				bc.h.ServeHTTP(rec, r)
				if rec.Code != http.StatusOK {
					b.Fatalf("status %d: %s", rec.Code, rec.Body)
				}
			}
		})
	}
}

// TestHTTPHandlersAnswerAsControllerRuntime: the handlers that decode a review
// and its pods in one pass answer every request exactly as controller-runtime's
// handler does, and hand it what they do not expect.
func TestHTTPHandlersAnswerAsControllerRuntime(t *testing.T) {
	const tenant = "system:serviceaccount:team-fraud:vc-fraud"
	h := newHarness(t)
	mutate, validate := h.w.HTTPHandlers()
	crMutate, crValidate := &webhook.Admission{Handler: h.w.Mutator()}, &webhook.Admission{Handler: h.w.Validator()}
	admitted, resp := h.mutate(t, h.request(t, admissionv1.Create, syncedPod("trainer-0"), nil, tenant))
	if !resp.Allowed {
		t.Fatal(resp.Result.Message)
	}
	admitted.UID = "pod-uid"
	ungated := admitted.DeepCopy()
	ungated.Spec.NodeSelector = nil
	review := func(req admission.Request) []byte {
		b, err := json.Marshal(admissionv1.AdmissionReview{
			TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
			Request:  &req.AdmissionRequest,
		})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	withSub := func(req admission.Request, sub string) admission.Request { req.SubResource = sub; return req }
	v1beta1 := func(b []byte) []byte {
		return bytes.Replace(b, []byte(`"admission.k8s.io/v1"`), []byte(`"admission.k8s.io/v1beta1"`), 1)
	}
	cases := map[string][]byte{
		"create":                 review(h.request(t, admissionv1.Create, syncedPod("trainer-0"), nil, tenant)),
		"create refused":         review(h.request(t, admissionv1.Create, pod().GPUs("64").Obj(), nil, tenant)),
		"create admitted":        review(h.request(t, admissionv1.Create, admitted.DeepCopy(), nil, tenant)),
		"update":                 review(h.request(t, admissionv1.Update, ungated.DeepCopy(), admitted.DeepCopy(), tenant)),
		"not a team namespace":   review(h.request(t, admissionv1.Create, podIn("p", "default"), nil, tenant)),
		"no policy":              review(h.request(t, admissionv1.Create, podIn("p", "broken"), nil, tenant)),
		"resize (raw handler)":   review(withSub(h.request(t, admissionv1.Update, admitted.DeepCopy(), admitted.DeepCopy(), tenant), "resize")),
		"ephemeral containers":   review(withSub(h.request(t, admissionv1.Update, admitted.DeepCopy(), admitted.DeepCopy(), tenant), "ephemeralcontainers")),
		"v1beta1 review":         v1beta1(review(h.request(t, admissionv1.Create, syncedPod("trainer-0"), nil, tenant))),
		"not JSON":               []byte("{"),
		"update without old pod": review(h.request(t, admissionv1.Update, admitted.DeepCopy(), nil, tenant)),
	}
	for name, body := range cases {
		for _, pair := range []struct {
			path     string
			ours, cr http.Handler
		}{{"mutate", mutate, crMutate}, {"validate", validate, crValidate}} {
			t.Run(name+"/"+pair.path, func(t *testing.T) {
				serve := func(h http.Handler) (int, string) {
					r := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(body))
					r.Header.Set("Content-Type", "application/json")
					rec := httptest.NewRecorder()
					h.ServeHTTP(rec, r)
					return rec.Code, strings.TrimSpace(rec.Body.String())
				}
				wantCode, want := serve(pair.cr)
				h.drainEvents()
				gotCode, got := serve(pair.ours)
				h.drainEvents()
				if gotCode != wantCode || got != want {
					t.Errorf("answer %d %s\nwant (controller-runtime's) %d %s", gotCode, got, wantCode, want)
				}
			})
		}
	}
}
