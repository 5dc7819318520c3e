package syncer

import (
	"context"
	"strings"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// validator re-checks the pod as it will be stored: every check passes and the
// mutations would change nothing. It runs after all mutating webhooks, so a
// webhook that undid part of the fence after ours is caught here.
type validator struct{ w *Webhook }

func (h validator) Handle(ctx context.Context, req admission.Request) admission.Response {
	start := time.Now()
	op := req.Operation
	if op != admissionv1.Create && op != admissionv1.Update {
		return admission.Allowed("")
	}
	if req.SubResource != "" && req.SubResource != "ephemeralcontainers" {
		return admission.Allowed("")
	}
	in, resp := h.w.input(ctx, req)
	if resp != nil {
		return *resp
	}
	var r Result
	switch {
	case req.SubResource == "ephemeralcontainers":
		r = ephemeralUpdate.Run(in)
	case op == admissionv1.Create:
		r = createChain(in.Role).Verify(in)
		// On the pod as stored (GPU requests mapped), so here only.
		if reason, message, denied := checkQueueDepth(in); denied && !r.Denied() {
			r = Result{Denials: []Denial{{reason, message}}}
		}
	default:
		r = podUpdate.Verify(in)
	}
	opName := strings.ToLower(string(op))
	if r.Denied() {
		h.w.emit(req, in.Pod, "Refuse", denialNotes(r))
		h.w.opts.Metrics.observe(teamOf(in), "validate", opName, "denied", start, r)
		return admission.Denied(r.Message())
	}
	if op == admissionv1.Create && req.SubResource == "" {
		// The pod now has its UID, so events attach to it.
		h.w.emit(req, in.Pod, "Admit", eventWorthy(decisions(in.Pod)))
	}
	h.w.opts.Metrics.observe(teamOf(in), "validate", opName, "allowed", start, r)
	return admission.Allowed("")
}
