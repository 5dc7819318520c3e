package syncer

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/gpuvc/gpuvc/api/contract"
)

// mutator applies the chain's mutations as a JSON patch.
type mutator struct{ w *Webhook }

func (h mutator) Handle(ctx context.Context, req admission.Request) admission.Response {
	start := time.Now()
	op := req.Operation
	if req.SubResource == "resize" && op == admissionv1.Update {
		if _, resp := h.w.input(ctx, req); resp != nil {
			return *resp // not a team namespace, or no policy
		}
		return h.handleResize(ctx, req)
	}
	if req.SubResource != "" || (op != admissionv1.Create && op != admissionv1.Update) {
		return admission.Allowed("")
	}
	in, resp := h.w.input(ctx, req)
	if resp != nil {
		return *resp
	}
	orig := in.Pod.DeepCopy() // the pod as the request holds it: the patch's base
	var r Result
	if op == admissionv1.Create {
		r = createChain(in.Role).Run(in)
	} else {
		r = podUpdate.Run(in)
	}
	opName := strings.ToLower(string(op))
	if r.Denied() {
		h.w.emit(req, in.Pod, "Refuse", denialNotes(r))
		h.w.opts.Metrics.observe(teamOf(in), "mutate", opName, "denied", start, r)
		return admission.Denied(r.Message())
	}
	if op == admissionv1.Create {
		// The pod has no UID yet: the validating webhook turns these into events.
		recordDecisions(in.Pod, r.Notes)
	} else if storesChange(in.Old, in.Pod) {
		// Only an UPDATE that still changes the pod is written; one that the
		// restorations turned into the stored pod is a no-op (vCluster re-sending
		// the tenant's gates and tolerations on every sync): nothing was decided
		// that anyone could see, so no event.
		h.w.emit(req, in.Old, "Restore", r.Notes)
	}
	patch, err := podPatch(orig, in.Pod)
	if err != nil {
		h.w.opts.Metrics.observe(teamOf(in), "mutate", opName, "error", start, r)
		return admission.Errored(500, err)
	}
	result := "allowed"
	if len(patch) > 0 {
		result = "patched"
	}
	h.w.opts.Metrics.observe(teamOf(in), "mutate", opName, result, start, r)
	return admission.Patched("", patch...)
}

// recordDecisions adds the notes worth an event to the decisions annotation. A
// reinvoked webhook finds its earlier notes there and keeps them.
func recordDecisions(pod *corev1.Pod, notes []Note) {
	all := decisions(pod)
	for _, n := range notes {
		if n.Type != "" && !slices.Contains(all, n) {
			all = append(all, n)
		}
	}
	if len(all) == 0 {
		return
	}
	b, err := json.Marshal(all)
	if err != nil {
		return
	}
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Annotations[contract.AnnotationDecisions] = string(b)
}

// routineReasons are decisions every pod of a team gets the same way: the
// team's standing rules, not a judgement of this pod. They stay in the
// decisions annotation (kubectl get pod -o yaml, in the team's cluster too) but
// are not sent as events: an event is one more API write for every pod created
// in every team namespace (most of what the webhook adds to a pod create, make
// bench's "Admission: where the time goes"), and one line of noise in every
// kubectl describe.
var routineReasons = []string{ReasonPoolPinned}

// eventWorthy drops the routine decisions from notes.
func eventWorthy(notes []Note) []Note {
	return slices.DeleteFunc(slices.Clone(notes), func(n Note) bool { return slices.Contains(routineReasons, n.Reason) })
}

// decisions reads the decisions annotation; anything unreadable counts as none.
func decisions(pod *corev1.Pod) []Note {
	var notes []Note
	if s, ok := pod.Annotations[contract.AnnotationDecisions]; ok {
		if err := json.Unmarshal([]byte(s), &notes); err != nil {
			return nil
		}
	}
	return notes
}
