package accounting

import (
	"maps"
	"slices"
	"strings"
	"time"
)

// Kinds of GPU time. Whole + MIG + Fraction + Reserved is what a team holds.
const (
	KindWhole    = "whole"    // nvidia.com/gpu of ordinary pods
	KindMIG      = "mig"      // MIG slices, weighted by compute slices
	KindFraction = "fraction" // shares of reservation GPUs bound to pods
	KindReserved = "reserved" // reservation GPUs not handed out as shares
	// KindLost is the GPU time of the team's pods drained for a failed GPU,
	// from their start to their eviction (the node agent's
	// gpuvc.dev/gpu-seconds-lost): work lost to GPU failures. That time was
	// held and is counted in the kinds above too, so it is not part of Total.
	KindLost = "lost-to-gpu-failure"
)

// Key is one series: a pool and a kind.
type Key struct{ Pool, Kind string }

func (k Key) String() string { return k.Pool + "/" + k.Kind }

// parseKey reads "pool/kind"; pools are DNS labels, so "/" cannot occur in them.
func parseKey(s string) (Key, bool) {
	pool, kind, ok := strings.Cut(s, "/")
	return Key{Pool: pool, Kind: kind}, ok
}

// Rates are GPUs held now per key (a whole GPU = 1).
type Rates map[Key]float64

// Seconds are GPU-seconds per key.
type Seconds map[Key]float64

func (s Seconds) add(k Key, v float64) {
	if v > 0 {
		s[k] += v
	}
}

// Total is what the team held: the sum over all keys but KindLost.
func (s Seconds) Total() float64 {
	t := 0.0
	for k, v := range s {
		if k.Kind != KindLost {
			t += v
		}
	}
	return t
}

// Ledger is one team's GPU time: totals since Since, hourly buckets for the
// retention window, and the rates of the last sample, which are assumed to hold
// until the next one.
type Ledger struct {
	Since     time.Time
	SampledAt time.Time
	Rates     Rates
	Totals    Seconds
	// Hours maps the start of an hour (UTC) to the GPU-seconds within it.
	Hours map[time.Time]Seconds
	// LostSeen is, per node, the node agent's cumulative GPU-seconds lost by
	// this team last credited (CreditLost).
	LostSeen map[string]float64
}

// NewLedger starts an empty ledger at now.
func NewLedger(now time.Time) *Ledger {
	return &Ledger{Since: now, SampledAt: now, Rates: Rates{}, Totals: Seconds{}, Hours: map[time.Time]Seconds{}}
}

// Advance integrates to now and records the rates sampled now. The interval since
// the last sample is credited with the rates of that sample (a left Riemann sum):
// a pod counts from the first sample that sees it until the first one that does
// not, so each start and stop is off by at most one interval. A clock that went
// backwards credits nothing.
func (l *Ledger) Advance(now time.Time, rates Rates) {
	l.credit(l.SampledAt, now, l.Rates)
	if now.After(l.SampledAt) {
		l.SampledAt = now
	}
	l.Rates = maps.Clone(rates)
}

// Resume integrates the time a previous manager did not see, from the last
// checkpoint to now, with what was held both then and now (the smaller rate of
// each key): allocations that lasted across the gap are kept, ones that started
// or ended within it are not guessed. Then it records the rates as Advance does.
func (l *Ledger) Resume(now time.Time, rates Rates) {
	both := Rates{}
	for k, v := range l.Rates {
		both[k] = min(v, rates[k])
	}
	l.Rates = both
	l.Advance(now, rates)
}

// credit adds rates × (to − from), split over the hours the interval spans.
func (l *Ledger) credit(from, to time.Time, rates Rates) {
	if !to.After(from) || len(rates) == 0 {
		return
	}
	for start := from; start.Before(to); {
		hour := start.UTC().Truncate(time.Hour)
		end := earlier(hour.Add(time.Hour), to)
		secs := end.Sub(start).Seconds()
		b := l.Hours[hour]
		if b == nil {
			b = Seconds{}
			l.Hours[hour] = b
		}
		for k, r := range rates {
			b.add(k, r*secs)
			l.Totals.add(k, r*secs)
		}
		start = end
	}
}

// CreditLost credits the increase of a node's cumulative GPU-seconds lost
// by the team (the node agent's annotation gpuvc.dev/gpu-seconds-lost) since
// the last sample to KindLost of pool, in the hour of now. A value lower than
// the last one (the annotation was reset) is credited whole.
func (l *Ledger) CreditLost(now time.Time, node, pool string, cumulative float64) {
	if l.LostSeen == nil {
		l.LostSeen = map[string]float64{}
	}
	seen, ok := l.LostSeen[node]
	if ok && cumulative == seen {
		return
	}
	delta := cumulative - seen
	if cumulative < seen {
		delta = cumulative
	}
	l.LostSeen[node] = cumulative
	if delta <= 0 {
		return
	}
	k := Key{Pool: pool, Kind: KindLost}
	hour := now.UTC().Truncate(time.Hour)
	if l.Hours[hour] == nil {
		l.Hours[hour] = Seconds{}
	}
	l.Hours[hour].add(k, delta)
	l.Totals.add(k, delta)
}

// Prune drops the hourly buckets that ended before now − retention; totals keep
// everything.
func (l *Ledger) Prune(now time.Time, retention time.Duration) {
	for h := range l.Hours {
		if !h.Add(time.Hour).After(now.Add(-retention)) {
			delete(l.Hours, h)
		}
	}
}

// Window is the GPU-seconds between from and to, from the hourly buckets. An
// hour only partly inside the window counts in proportion (use within an hour is
// taken as even). The returned time is where the data starts: from, or later when
// the ledger started later or older hours were pruned.
func (l *Ledger) Window(from, to time.Time) (Seconds, time.Time) {
	out := Seconds{}
	hours := slices.SortedFunc(maps.Keys(l.Hours), func(a, b time.Time) int { return a.Compare(b) })
	dataFrom := later(from, l.Since)
	if len(hours) > 0 {
		dataFrom = later(dataFrom, hours[0])
	}
	for _, h := range hours {
		// The part of the hour the ledger covers, and the part of that in the window.
		covStart, covEnd := later(h, l.Since), earlier(h.Add(time.Hour), l.SampledAt)
		start, end := later(covStart, from), earlier(covEnd, to)
		if !end.After(start) || !covEnd.After(covStart) {
			continue
		}
		share := end.Sub(start).Seconds() / covEnd.Sub(covStart).Seconds()
		for k, v := range l.Hours[h] {
			out.add(k, v*share)
		}
	}
	return out, dataFrom
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func earlier(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
