package nodeagent

import (
	"fmt"
	"sort"
	"time"

	"github.com/gpuvc/gpuvc/gpu/health"
)

// GPUState is where a GPU stands in the agent's quarantine.
type GPUState string

const (
	// StateInService: the device plugin offers the GPU.
	StateInService GPUState = "InService"
	// StateProbation: the GPU failed and is out until Probation passes with no
	// new error.
	StateProbation GPUState = "Probation"
	// StatePermanent: the GPU failed MaxFailures times and stays out until an
	// operator clears it (annotation gpuvc.dev/gpu-quarantine-clear).
	StatePermanent GPUState = "Permanent"
)

// QuarantinePolicy says how long a failed GPU stays out.
type QuarantinePolicy struct {
	// Probation is how long a failed GPU stays out with no new error before it
	// returns to service by itself (--gpu-probation); zero: it never returns
	// by itself.
	Probation time.Duration
	// MaxFailures quarantines a GPU permanently when it is taken out for the
	// MaxFailures-th time (--gpu-max-failures); zero: never.
	MaxFailures int
}

// GPURecord is one GPU's quarantine record. The agent keeps every record on
// its Node (contract.AnnotationGPUQuarantine), so a restarted agent continues
// the counts, the probations and the permanent quarantines.
type GPURecord struct {
	State GPUState `json:"state"`
	// Failures counts the times the GPU was taken out of service; repeated
	// errors while it is out do not count.
	Failures int `json:"failures"`
	// Returns counts the times it came back from probation by itself.
	Returns int `json:"returns"`
	// Last is the latest error.
	Last health.Event `json:"last"`
	// Since is when it was last taken out; Until is when its probation ends
	// (zero: permanent, or no probation).
	Since time.Time `json:"since,omitzero"`
	Until time.Time `json:"until,omitzero"`
}

// Out reports whether the GPU is out of service.
func (r GPURecord) Out() bool { return r.State == StateProbation || r.State == StatePermanent }

// String says where the GPU stands, for conditions and events: "GPU 3
// (GPU-…): XID 79 (…); failure 1 of 3, probation until 12:00:00Z, returned 0
// times".
func (r GPURecord) String(p QuarantinePolicy) string {
	of := ""
	if p.MaxFailures > 0 {
		of = fmt.Sprintf(" of %d", p.MaxFailures)
	}
	where := "in service"
	switch r.State {
	case StatePermanent:
		where = "permanently quarantined until an operator clears it (annotation gpuvc.dev/gpu-quarantine-clear)"
	case StateProbation:
		where = "out until an operator clears it (no probation)"
		if !r.Until.IsZero() {
			where = "probation until " + r.Until.UTC().Format(time.RFC3339)
		}
	}
	return fmt.Sprintf("%s; failure %d%s, %s, returned %d times", r.Last, r.Failures, of, where, r.Returns)
}

// Transition is what an error or the passing of time did to a GPU.
type Transition string

const (
	// TransitionNone: nothing changed (an error of a GPU already permanently
	// out).
	TransitionNone Transition = ""
	// TransitionOut: taken out of service, on probation.
	TransitionOut Transition = "Out"
	// TransitionPermanent: taken out of service for good.
	TransitionPermanent Transition = "Permanent"
	// TransitionExtended: a new error during probation restarted it.
	TransitionExtended Transition = "Extended"
	// TransitionReturned: back in service after its probation.
	TransitionReturned Transition = "Returned"
	// TransitionCleared: back in service by an operator.
	TransitionCleared Transition = "Cleared"
)

// Quarantine is the state machine of a node's GPUs. Time is passed in, so
// tests drive it with a fake clock. Not safe for concurrent use.
type Quarantine struct {
	Policy QuarantinePolicy
	gpus   map[string]*GPURecord // by UUID; GPUs that never failed have none
}

// Fail records an error of a GPU at now.
func (q *Quarantine) Fail(e health.Event, now time.Time) Transition {
	if q.gpus == nil {
		q.gpus = map[string]*GPURecord{}
	}
	r := q.gpus[e.UUID]
	if r == nil {
		r = &GPURecord{State: StateInService}
		q.gpus[e.UUID] = r
	}
	r.Last = e
	switch r.State {
	case StatePermanent:
		return TransitionNone
	case StateProbation:
		if q.Policy.Probation <= 0 {
			return TransitionNone // out until cleared: nothing to restart
		}
		r.Until = q.until(now)
		return TransitionExtended
	}
	r.Failures++
	r.Since = now
	if q.Policy.MaxFailures > 0 && r.Failures >= q.Policy.MaxFailures {
		r.State, r.Until = StatePermanent, time.Time{}
		return TransitionPermanent
	}
	r.State, r.Until = StateProbation, q.until(now)
	return TransitionOut
}

func (q *Quarantine) until(now time.Time) time.Time {
	if q.Policy.Probation <= 0 {
		return time.Time{}
	}
	return now.Add(q.Policy.Probation)
}

// Expire returns to service the GPUs whose probation ended by now, and
// returns their UUIDs.
func (q *Quarantine) Expire(now time.Time) []string {
	var back []string
	for uuid, r := range q.gpus {
		if r.State == StateProbation && !r.Until.IsZero() && !now.Before(r.Until) {
			r.State, r.Until = StateInService, time.Time{}
			r.Returns++
			back = append(back, uuid)
		}
	}
	sort.Strings(back)
	return back
}

// Clear returns a GPU to service by an operator's decision and forgets its
// failures; false if it was not out.
func (q *Quarantine) Clear(uuid string) bool {
	r := q.gpus[uuid]
	if r == nil || !r.Out() {
		return false
	}
	r.State, r.Until, r.Failures = StateInService, time.Time{}, 0
	return true
}

// Next is the earliest end of a probation; false when none is pending.
func (q *Quarantine) Next() (time.Time, bool) {
	var next time.Time
	for _, r := range q.gpus {
		if r.State == StateProbation && !r.Until.IsZero() && (next.IsZero() || r.Until.Before(next)) {
			next = r.Until
		}
	}
	return next, !next.IsZero()
}

// Record returns a GPU's record; false if it never failed.
func (q *Quarantine) Record(uuid string) (GPURecord, bool) {
	r := q.gpus[uuid]
	if r == nil {
		return GPURecord{}, false
	}
	return *r, true
}

// Out lists the records of the GPUs out of service, by index.
func (q *Quarantine) Out() []GPURecord {
	var out []GPURecord
	for _, r := range q.gpus {
		if r.Out() {
			out = append(out, *r)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Last.Index < out[j].Last.Index })
	return out
}

// Records returns a copy of every record, by UUID.
func (q *Quarantine) Records() map[string]GPURecord {
	out := make(map[string]GPURecord, len(q.gpus))
	for uuid, r := range q.gpus {
		out[uuid] = *r
	}
	return out
}

// Restore continues from records a previous agent left (the Node's
// annotation). A GPU that already failed in this agent before the records
// were read (the API server was unreachable at start) keeps its latest error
// and probation and adds the recorded counts.
func (q *Quarantine) Restore(records map[string]GPURecord) {
	if q.gpus == nil {
		q.gpus = map[string]*GPURecord{}
	}
	for uuid, r := range records {
		if r.State == "" {
			r.State = StateInService
		}
		known := q.gpus[uuid]
		if known == nil {
			q.gpus[uuid] = &r
			continue
		}
		known.Returns += r.Returns
		switch r.State {
		case StatePermanent:
			known.State, known.Until, known.Failures = StatePermanent, time.Time{}, r.Failures
		case StateProbation: // the same time out, seen again
			known.Failures = max(r.Failures, 1)
		default:
			known.Failures += r.Failures
		}
		if known.State == StateProbation && q.Policy.MaxFailures > 0 && known.Failures >= q.Policy.MaxFailures {
			known.State, known.Until = StatePermanent, time.Time{}
		}
	}
}
