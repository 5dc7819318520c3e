package nodeagent

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/gpuvc/gpuvc/gpu/health"
)

// The quarantine's state machine on a fake clock: out on a failure, a new
// error during probation restarts it, back after a quiet probation with the
// return counted, permanent at the MaxFailures-th failure (further errors
// change nothing, time does not bring it back), and an operator's clear
// returns it with its count reset.
func TestQuarantineStateMachine(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC))
	q := &Quarantine{Policy: QuarantinePolicy{Probation: 10 * time.Minute, MaxFailures: 3}}
	xid := health.Event{Index: 3, UUID: "GPU-c", Kind: health.KindXID, XID: 79}
	state := func() (GPUState, int, int) {
		r, ok := q.Record("GPU-c")
		if !ok {
			t.Fatal("no record of GPU-c")
		}
		return r.State, r.Failures, r.Returns
	}
	check := func(step string, wantState GPUState, wantFailures, wantReturns int) {
		t.Helper()
		s, f, r := state()
		if s != wantState || f != wantFailures || r != wantReturns {
			t.Errorf("%s: state %s failures %d returns %d, want %s %d %d", step, s, f, r, wantState, wantFailures, wantReturns)
		}
	}

	if got := q.Fail(xid, clk.Now()); got != TransitionOut {
		t.Fatalf("first failure: %q, want Out", got)
	}
	check("first failure", StateProbation, 1, 0)
	if next, ok := q.Next(); !ok || !next.Equal(clk.Now().Add(10*time.Minute)) {
		t.Errorf("next probation end %v %v", next, ok)
	}

	clk.Step(9 * time.Minute)
	if back := q.Expire(clk.Now()); len(back) != 0 {
		t.Errorf("returned before the probation ended: %v", back)
	}
	// NVML repeats an error: the probation starts again, no new failure.
	if got := q.Fail(xid, clk.Now()); got != TransitionExtended {
		t.Errorf("error during probation: %q, want Extended", got)
	}
	check("error during probation", StateProbation, 1, 0)
	clk.Step(9 * time.Minute) // 18 min after the first error, 9 after the last
	if back := q.Expire(clk.Now()); len(back) != 0 {
		t.Errorf("returned 9 minutes after the last error: %v", back)
	}
	clk.Step(time.Minute)
	if back := q.Expire(clk.Now()); !cmp.Equal(back, []string{"GPU-c"}) {
		t.Errorf("after a quiet probation: returned %v, want GPU-c", back)
	}
	check("probation over", StateInService, 1, 1)
	if _, ok := q.Next(); ok {
		t.Error("a probation is pending with every GPU in service")
	}
	if out := q.Out(); len(out) != 0 {
		t.Errorf("out: %v", out)
	}

	// Second failure: out again; it returns; the third is permanent.
	if got := q.Fail(xid, clk.Now()); got != TransitionOut {
		t.Errorf("second failure: %q", got)
	}
	clk.Step(10 * time.Minute)
	q.Expire(clk.Now())
	check("second return", StateInService, 2, 2)
	if got := q.Fail(xid, clk.Now()); got != TransitionPermanent {
		t.Errorf("third failure: %q, want Permanent", got)
	}
	check("third failure", StatePermanent, 3, 2)
	if got := q.Fail(xid, clk.Now()); got != TransitionNone {
		t.Errorf("error of a permanently quarantined GPU: %q, want none", got)
	}
	clk.Step(24 * time.Hour)
	if back := q.Expire(clk.Now()); len(back) != 0 {
		t.Errorf("a permanent quarantine ended by itself: %v", back)
	}
	if out := q.Out(); len(out) != 1 || out[0].Last.UUID != "GPU-c" {
		t.Errorf("out: %v", out)
	}

	if q.Clear("GPU-other") {
		t.Error("cleared a GPU that never failed")
	}
	if !q.Clear("GPU-c") {
		t.Fatal("clear of the quarantined GPU refused")
	}
	check("cleared", StateInService, 0, 2)
	if got := q.Fail(xid, clk.Now()); got != TransitionOut {
		t.Errorf("first failure after a clear: %q, want Out (count reset)", got)
	}
}

// Probation 0: out until cleared; MaxFailures 0: never permanent.
func TestQuarantineWithoutProbationOrLimit(t *testing.T) {
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	q := &Quarantine{}
	e := health.Event{UUID: "GPU-a", Kind: health.KindLost}
	for i := range 5 {
		if got := q.Fail(e, now); got != TransitionOut {
			t.Fatalf("failure %d: %q, want Out", i+1, got)
		}
		if back := q.Expire(now.Add(1000 * time.Hour)); len(back) != 0 {
			t.Fatalf("returned without a probation: %v", back)
		}
		q.Clear("GPU-a")
	}
}

// A restarted agent continues the records; errors it saw before reading them
// add to their counts.
func TestQuarantineRestore(t *testing.T) {
	until := time.Date(2026, 11, 28, 12, 10, 0, 0, time.UTC)
	q := &Quarantine{Policy: QuarantinePolicy{Probation: 10 * time.Minute, MaxFailures: 2}}
	q.Restore(map[string]GPURecord{
		"GPU-a": {State: StateProbation, Failures: 1, Until: until, Last: health.Event{UUID: "GPU-a", Kind: health.KindXID, XID: 48}},
		"GPU-b": {State: StatePermanent, Failures: 2, Last: health.Event{Index: 1, UUID: "GPU-b", Kind: health.KindLost}},
	})
	if out := q.Out(); len(out) != 2 {
		t.Fatalf("out after restore: %v", out)
	}
	if back := q.Expire(until); !cmp.Equal(back, []string{"GPU-a"}) {
		t.Errorf("restored probation: returned %v", back)
	}
	if got := q.Fail(health.Event{UUID: "GPU-a", Kind: health.KindXID, XID: 48}, until); got != TransitionPermanent {
		t.Errorf("second failure of a GPU restored with one: %q, want Permanent", got)
	}
}

// A GPU that failed before the records were read: its recorded failure
// counts, and that one makes the second (permanent with MaxFailures 2).
func TestQuarantineRestoreAfterAnEarlyError(t *testing.T) {
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	q := &Quarantine{Policy: QuarantinePolicy{Probation: time.Minute, MaxFailures: 2}}
	q.Fail(health.Event{UUID: "GPU-a", Kind: health.KindLost}, now)
	q.Restore(map[string]GPURecord{"GPU-a": {State: StateInService, Failures: 1, Returns: 1}})
	if r, _ := q.Record("GPU-a"); r.State != StatePermanent || r.Failures != 2 || r.Returns != 1 {
		t.Errorf("record %+v, want Permanent after 2 failures, 1 return", r)
	}
}
