package accounting

import (
	"encoding/json"
	"fmt"
	"time"
)

// ledgerJSON is the checkpoint format: series keyed "pool/kind", hours keyed by
// their RFC 3339 start.
type ledgerJSON struct {
	Since     time.Time                     `json:"since"`
	SampledAt time.Time                     `json:"sampledAt"`
	Rates     map[string]float64            `json:"rates,omitempty"`
	Totals    map[string]float64            `json:"totals,omitempty"`
	Hours     map[string]map[string]float64 `json:"hours,omitempty"`
	LostSeen  map[string]float64            `json:"lostSeen,omitempty"`
}

// MarshalJSON implements json.Marshaler.
func (l *Ledger) MarshalJSON() ([]byte, error) {
	out := ledgerJSON{Since: l.Since.UTC(), SampledAt: l.SampledAt.UTC(),
		Rates: encodeKeys(l.Rates), Totals: encodeKeys(l.Totals), Hours: map[string]map[string]float64{}, LostSeen: l.LostSeen}
	for h, s := range l.Hours {
		out.Hours[h.UTC().Format(time.RFC3339)] = encodeKeys(s)
	}
	return json.Marshal(out)
}

// UnmarshalJSON implements json.Unmarshaler.
func (l *Ledger) UnmarshalJSON(b []byte) error {
	var in ledgerJSON
	if err := json.Unmarshal(b, &in); err != nil {
		return err
	}
	*l = Ledger{Since: in.Since, SampledAt: in.SampledAt, Rates: Rates(decodeKeys(in.Rates)),
		Totals: Seconds(decodeKeys(in.Totals)), Hours: map[time.Time]Seconds{}, LostSeen: in.LostSeen}
	for h, s := range in.Hours {
		t, err := time.Parse(time.RFC3339, h)
		if err != nil {
			return fmt.Errorf("hour %q: %w", h, err)
		}
		l.Hours[t.UTC()] = Seconds(decodeKeys(s))
	}
	return nil
}

func encodeKeys[M ~map[Key]float64](m M) map[string]float64 {
	out := make(map[string]float64, len(m))
	for k, v := range m {
		out[k.String()] = v
	}
	return out
}

func decodeKeys(m map[string]float64) map[Key]float64 {
	out := make(map[Key]float64, len(m))
	for s, v := range m {
		if k, ok := parseKey(s); ok {
			out[k] = v
		}
	}
	return out
}
