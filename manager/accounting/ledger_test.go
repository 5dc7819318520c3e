package accounting

import (
	"encoding/json"
	"math"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	clocktesting "k8s.io/utils/clock/testing"
)

var (
	whole = Key{"a100", KindWhole}
	mig1  = Key{"a100", KindMIG}
	// approx compares GPU-seconds to a millisecond.
	approx = cmpopts.EquateApprox(0, 1e-6)
)

func TestLedgerAdvance(t *testing.T) {
	start := time.Date(2026, 11, 25, 9, 30, 0, 0, time.UTC)
	clk := clocktesting.NewFakeClock(start)
	l := NewLedger(clk.Now())

	l.Advance(clk.Now(), Rates{whole: 2}) // seen now: counts from here on
	clk.Step(time.Hour)                   // 9:30 -> 10:30, across an hour boundary
	l.Advance(clk.Now(), Rates{whole: 2, mig1: 1.0 / 7})
	clk.Step(70 * time.Second)
	l.Advance(clk.Now(), Rates{})
	clk.Step(time.Hour) // nothing held: nothing counted
	l.Advance(clk.Now(), Rates{})

	want := Seconds{whole: 2*3600 + 2*70, mig1: 10}
	if d := cmp.Diff(want, l.Totals, approx); d != "" {
		t.Errorf("totals (-want +got):\n%s", d)
	}
	nine, ten := start.Truncate(time.Hour), start.Truncate(time.Hour).Add(time.Hour)
	wantHours := map[time.Time]Seconds{nine: {whole: 2 * 1800}, ten: {whole: 2*1800 + 140, mig1: 10}}
	if d := cmp.Diff(wantHours, l.Hours, approx, cmpopts.EquateEmpty()); d != "" {
		t.Errorf("hours (-want +got):\n%s", d)
	}
}

func TestLedgerBackwardsClockCreditsNothing(t *testing.T) {
	now := time.Date(2026, 11, 25, 9, 0, 0, 0, time.UTC)
	l := NewLedger(now)
	l.Advance(now, Rates{whole: 1})
	l.Advance(now.Add(-time.Minute), Rates{whole: 1})
	if got := l.Totals.Total(); got != 0 {
		t.Errorf("total = %v after the clock went back, want 0", got)
	}
}

func TestLedgerResume(t *testing.T) {
	now := time.Date(2026, 11, 25, 9, 0, 0, 0, time.UTC)
	l := NewLedger(now)
	l.Advance(now, Rates{whole: 3, mig1: 1})
	l.Advance(now.Add(time.Minute), Rates{whole: 3, mig1: 1}) // checkpointed here

	// A new manager, ten minutes later: one whole GPU and the slice were released
	// during the gap; only what was held both before and after is credited.
	l.Resume(now.Add(11*time.Minute), Rates{whole: 2})
	want := Seconds{whole: 3*60 + 2*600, mig1: 60}
	if d := cmp.Diff(want, l.Totals, approx); d != "" {
		t.Errorf("totals (-want +got):\n%s", d)
	}
	if d := cmp.Diff(Rates{whole: 2}, l.Rates); d != "" {
		t.Errorf("rates after resume (-want +got):\n%s", d)
	}
}

func TestLedgerPruneAndWindow(t *testing.T) {
	start := time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)
	l := NewLedger(start)
	l.Advance(start, Rates{whole: 1})
	now := start.Add(72 * time.Hour)
	l.Advance(now, Rates{whole: 1}) // one GPU for three days
	l.Prune(now, 48*time.Hour)

	if len(l.Hours) != 48 {
		t.Errorf("kept %d hourly buckets, want 48", len(l.Hours))
	}
	if got := l.Totals[whole]; got != 72*3600 {
		t.Errorf("total = %v, pruning must keep totals", got)
	}
	for name, tc := range map[string]struct {
		from, wantFrom time.Time
		want           float64
	}{
		"last day":         {now.Add(-24 * time.Hour), now.Add(-24 * time.Hour), 24 * 3600},
		"half an hour":     {now.Add(-30 * time.Minute), now.Add(-30 * time.Minute), 1800},
		"beyond retention": {now.Add(-100 * time.Hour), now.Add(-48 * time.Hour), 48 * 3600},
	} {
		t.Run(name, func(t *testing.T) {
			got, from := l.Window(tc.from, now)
			if math.Abs(got[whole]-tc.want) > 1e-6 || !from.Equal(tc.wantFrom) {
				t.Errorf("Window = %v from %v, want %v from %v", got[whole], from, tc.want, tc.wantFrom)
			}
		})
	}
}

func TestLedgerWindowPartialHour(t *testing.T) {
	// Sampled until 10:15: the 10:00 bucket covers 15 minutes, so a window from
	// 10:05 gets two thirds of it.
	start := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	l := NewLedger(start)
	l.Advance(start, Rates{whole: 1})
	l.Advance(start.Add(15*time.Minute), Rates{})
	got, _ := l.Window(start.Add(5*time.Minute), start.Add(time.Hour))
	if math.Abs(got[whole]-600) > 1e-6 {
		t.Errorf("window = %v, want 600", got[whole])
	}
}

func TestLedgerJSONRoundTrip(t *testing.T) {
	now := time.Date(2026, 11, 25, 9, 59, 0, 0, time.UTC)
	l := NewLedger(now)
	l.Advance(now, Rates{whole: 1, mig1: 2.0 / 7})
	l.Advance(now.Add(2*time.Minute), Rates{whole: 1})
	b, err := json.Marshal(l)
	if err != nil {
		t.Fatal(err)
	}
	got := &Ledger{}
	if err := json.Unmarshal(b, got); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(l, got, approx); d != "" {
		t.Errorf("round trip (-want +got):\n%s", d)
	}
}
