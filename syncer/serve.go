package syncer

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
	sigsjson "sigs.k8s.io/json"
)

// maxReviewBytes bounds a request body, as controller-runtime's handler does.
const maxReviewBytes = 7 << 20

// reviewHandler serves one of the webhook's handlers over HTTP, decoding the
// AdmissionReview and its pods in one pass: controller-runtime's handler
// decodes the review (with its pods as raw JSON), then each pod again from its
// bytes, every pass scanning the whole pod twice (once to find its kind); a
// pod's JSON is most of a review, and decoding was most of the webhook's CPU
// per request (BenchmarkWebhookHTTP). Reviews it does not expect (another
// version, a subresource, which the resize handler reads as raw JSON) go to
// controller-runtime's handler, which answers them as before. Either way the
// answer is controller-runtime's (Webhook.Handle: panics recovered, the
// response completed).
type reviewHandler struct {
	hook *admission.Webhook
}

// newReviewHandler serves h.
func newReviewHandler(h admission.Handler) *reviewHandler {
	return &reviewHandler{hook: &admission.Webhook{Handler: h}}
}

// podReview is an admission.k8s.io/v1 AdmissionReview of a pod, its objects
// decoded as pods (the fields shadow the embedded request's raw ones).
type podReview struct {
	metav1.TypeMeta `json:",inline"`
	Request         *podRequest `json:"request,omitempty"`
}

type podRequest struct {
	admissionv1.AdmissionRequest
	Object    *corev1.Pod `json:"object,omitempty"`
	OldObject *corev1.Pod `json:"oldObject,omitempty"`
}

// decodedPodsKey carries a request's pods, decoded with the review, to input.
type decodedPodsKey struct{}

type decodedPods struct{ pod, old *corev1.Pod }

func (h *reviewHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Body == nil || r.Body == http.NoBody || r.Header.Get("Content-Type") != "application/json" {
		h.hook.ServeHTTP(w, r) // refuses it, saying why
		return
	}
	defer r.Body.Close()
	body, err := io.ReadAll(io.LimitReader(r.Body, maxReviewBytes+1))
	if err != nil {
		write(w, admission.Errored(http.StatusBadRequest, err))
		return
	}
	var review podReview
	if len(body) > maxReviewBytes || sigsjson.UnmarshalCaseSensitivePreserveInts(body, &review) != nil || !expected(&review) {
		r.Body = io.NopCloser(bytes.NewReader(body))
		h.hook.ServeHTTP(w, r)
		return
	}
	req := admission.Request{AdmissionRequest: review.Request.AdmissionRequest}
	ctx := context.WithValue(r.Context(), decodedPodsKey{}, &decodedPods{pod: review.Request.Object, old: review.Request.OldObject})
	write(w, h.hook.Handle(ctx, req))
}

// write answers with a v1 AdmissionReview (the only version expected accepts).
func write(w http.ResponseWriter, resp admission.Response) {
	w.Header().Set("Content-Type", "application/json")
	out := admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: admissionv1.SchemeGroupVersion.String(), Kind: "AdmissionReview"},
		Response: &resp.AdmissionResponse,
	}
	// An error here is a broken connection: nothing more can be written to it.
	_ = json.NewEncoder(w).Encode(out)
}

// expected: a v1 review of a pod's CREATE or UPDATE (not a subresource), its
// objects present as the operation has them.
func expected(r *podReview) bool {
	q := r.Request
	switch {
	case r.APIVersion != admissionv1.SchemeGroupVersion.String() || r.Kind != "AdmissionReview" || q == nil:
		return false
	case q.Kind.Group != "" || q.Kind.Kind != "Pod" || q.SubResource != "" || q.Object == nil:
		return false
	case q.Operation == admissionv1.Update:
		return q.OldObject != nil
	}
	return q.Operation == admissionv1.Create
}

// podsFrom returns the pods ServeHTTP decoded with the review, if it did.
func podsFrom(ctx context.Context) *decodedPods {
	d, _ := ctx.Value(decodedPodsKey{}).(*decodedPods)
	return d
}
