package idle

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestWholeTeamIdle: action Sleep's decision. A team sleeps only when it has a
// GPU pod and every one has been idle for `after`; one busy, unknown or
// starting GPU pod, or one idle for less, keeps it awake (pods without GPUs
// never reach the decision).
func TestWholeTeamIdle(t *testing.T) {
	const after = 5 * time.Minute
	idle := func(d time.Duration) podLook { return podLook{state: podIdle, idleFor: d} }
	for name, tc := range map[string]struct {
		looks []podLook
		idle  bool
		why   string
	}{
		"no GPU pod":               {nil, false, "the team runs no GPU pod"},
		"one pod idle long enough": {[]podLook{idle(after)}, true, "all 1 GPU pod(s) of the team have been idle for at least 5m0s"},
		"all idle long enough":     {[]podLook{idle(after), idle(2 * after), idle(after + time.Second)}, true, "all 3 GPU pod(s)"},
		"one busy":                 {[]podLook{idle(time.Hour), {state: podBusy, percent: 80}}, false, "1 of its 2 GPU pod(s) are not idle long enough (1 busy)"},
		"unknown is never idle":    {[]podLook{idle(time.Hour), {state: podUnknown}}, false, "1 of unknown utilization"},
		"a GPU pod still starting": {[]podLook{idle(time.Hour), {state: podStarting}}, false, "1 not running yet"},
		"one idle for too short":   {[]podLook{idle(time.Hour), idle(after - time.Second)}, false, "1 idle for less than 5m0s"},
		"everything that is not":   {[]podLook{{state: podBusy}, {state: podUnknown}, {state: podStarting}, idle(0)}, false, "4 of its 4 GPU pod(s) are not idle long enough (1 busy, 1 of unknown utilization, 1 not running yet, 1 idle for less than 5m0s)"},
		"only unknown, none busy":  {[]podLook{{state: podUnknown}}, false, "1 of unknown utilization"},
	} {
		t.Run(name, func(t *testing.T) {
			got, why := wholeTeamIdle(tc.looks, after)
			require.Equal(t, tc.idle, got, why)
			require.Contains(t, why, tc.why)
		})
	}
}
