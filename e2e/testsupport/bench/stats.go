package bench

import (
	"slices"
	"time"
)

// Percentile returns the q-quantile (0..1, nearest rank below) of d in
// milliseconds.
func Percentile(d []time.Duration, q float64) float64 {
	s := slices.Clone(d)
	slices.Sort(s)
	return float64(s[int(q*float64(len(s)-1))].Microseconds()) / 1000
}

// Mean is the arithmetic mean of v.
func Mean(v []float64) float64 {
	s := 0.0
	for _, x := range v {
		s += x
	}
	return s / float64(len(v))
}
