package syncer

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"

	"github.com/gpuvc/gpuvc/api/contract"
)

// Input is what every decision sees. Mutations change Pod in place; everything
// else is read-only and was resolved by the handler before the chain runs, so
// decisions do no I/O.
type Input struct {
	Policy *TeamPolicy
	Pod    *corev1.Pod
	Old    *corev1.Pod // the stored pod on UPDATE, nil on CREATE
	// Role is RoleWorkload or RoleControlPlane (see roleOf).
	Role string
	// Trusted is true for requests of gpuvc's own components (TrustedUsers):
	// they may write gpuvc.dev/ metadata and remove the share gate.
	Trusted bool
	// Kueue is true for requests of Kueue's controller (KueueUsers): the only
	// one that lifts Kueue's admission gate.
	Kueue bool
	// VClusterSyncer is true for requests of the team's vCluster syncer, which
	// sends the virtual pod's scheduling gates (none) with every update.
	VClusterSyncer bool
	// ReserveWriter is true for requests of the namespace's reservation account
	// (gpuvc reserve): it may record, once, the UUID of the GPU its pod holds.
	ReserveWriter bool
	// QuotaUsed is what the namespace's ResourceQuota counts now per GPU
	// resource (pods running and waiting), on CREATE of a queueing team's pod;
	// nil when unknown.
	QuotaUsed map[corev1.ResourceName]int64
	// NodePools maps every node the pod names to that node's pool ("" when the
	// node has no pool or was not found). Nodes missing from the map are unknown.
	NodePools map[string]string
	// EnvSourceKeys are the keys of the ConfigMaps and Secrets the pod's envFrom
	// names ("configMap/<name>", "secret/<name>"), as the handler read them;
	// objects missing here are not judged.
	EnvSourceKeys map[string][]string
	// Claims are the pod's spec.resourceClaims resolved to the claim specs
	// they name, on CREATE of a spec.dra team's workload pod; nil otherwise.
	Claims []PodClaim
	// DevicesUsed counts the team's whole GPUs and DRA devices now (its
	// ResourceQuota's status), on CREATE of a spec.dra team's pod with a GPU
	// ceiling; -1 when not read.
	DevicesUsed int64
	// MIG maps MIG profiles between GPU models; nil allows exact profiles only.
	MIG MIGMapper
}

// pool is the pool this pod must stay in.
func (in *Input) pool() string {
	if in.Role == contract.RoleControlPlane {
		return in.Policy.systemPool()
	}
	return in.Policy.Pool
}

// Event types of a Note. A Note without a type changes only gpuvc's own
// bookkeeping and raises no event.
const (
	Normal  = corev1.EventTypeNormal
	Warning = corev1.EventTypeWarning
)

// Note records one change a mutation made.
type Note struct {
	Type    string `json:"type,omitempty"`
	Reason  string `json:"reason"`
	Message string `json:"message"`
}

// Check refuses what cannot be honoured. It reads in only.
type Check func(in *Input) (reason, message string, denied bool)

// Mutation rewrites in.Pod toward the policy and returns a Note for every change;
// run on its own output it must change nothing (the validating webhook relies on
// that fixed point).
type Mutation func(in *Input) []Note

// Denial is a refusal by a Check.
type Denial struct{ Reason, Message string }

// Result is the outcome of a chain.
type Result struct {
	Denials []Denial
	Notes   []Note
}

// Denied reports whether any check refused the pod.
func (r Result) Denied() bool { return len(r.Denials) > 0 }

// Message joins the refusals for the API response; vCluster shows it on the
// virtual pod.
func (r Result) Message() string {
	parts := make([]string, len(r.Denials))
	for i, d := range r.Denials {
		parts[i] = d.Reason + ": " + d.Message
	}
	return "gpuvc: " + strings.Join(parts, "; ")
}

// Chain is an ordered list of checks and mutations for one kind of request.
type Chain struct {
	Checks    []Check
	Mutations []Mutation
}

// Run applies every check, and, when none refused, every mutation.
func (c Chain) Run(in *Input) Result {
	var r Result
	for _, check := range c.Checks {
		if reason, message, denied := check(in); denied {
			r.Denials = append(r.Denials, Denial{reason, message})
		}
	}
	if r.Denied() {
		return r
	}
	for _, m := range c.Mutations {
		r.Notes = append(r.Notes, m(in)...)
	}
	return r
}

// Verify checks a pod that should already have been admitted: every check must
// pass and no mutation may change it. It does not modify in.Pod.
func (c Chain) Verify(in *Input) Result {
	pod := in.Pod
	cp := *in
	cp.Pod = pod.DeepCopy()
	r := c.Run(&cp)
	if r.Denied() {
		return r
	}
	if len(r.Notes) > 0 || !equality.Semantic.DeepEqual(pod, cp.Pod) {
		msgs := make([]string, 0, len(r.Notes))
		for _, n := range r.Notes {
			msgs = append(msgs, n.Reason+": "+n.Message)
		}
		if len(msgs) == 0 {
			msgs = append(msgs, "the pod differs from what gpuvc admits")
		}
		return Result{Denials: []Denial{{ReasonNotAsAdmitted, fmt.Sprintf(
			"the pod was changed after gpuvc's mutating webhook (another webhook or a missed mutation); gpuvc would still make these changes: %s. Remove the conflicting webhook or setting",
			strings.Join(msgs, "; "))}}}
	}
	return Result{}
}
