package idle

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestDecide(t *testing.T) {
	t0 := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	const after, probe = 30 * time.Minute, 5 * time.Minute
	awake := state{replicas: 1}
	drowsy := state{routed: true, replicas: 1}
	asleep := state{routed: true, replicas: 0}
	type want struct {
		Act    action
		Reason string
	}
	for name, tc := range map[string]struct {
		idle      time.Duration // since the last activity
		st        state
		noPolicy  bool
		openConns int
		want      want
	}{
		"awake, recently used":                 {idle: 10 * time.Minute, st: awake, want: want{actNone, "Awake"}},
		"awake, just short of the probe":       {idle: 25*time.Minute - time.Second, st: awake, want: want{actNone, "Awake"}},
		"awake, the probe window begins":       {idle: 25 * time.Minute, st: awake, want: want{actRoute, "Drowsy"}},
		"drowsy, window not over":              {idle: 29 * time.Minute, st: drowsy, want: want{actNone, "Drowsy"}},
		"drowsy, a connection came":            {idle: time.Minute, st: drowsy, want: want{actUnroute, "Awake"}},
		"drowsy, window over":                  {idle: 30 * time.Minute, st: drowsy, want: want{actSleep, "Asleep"}},
		"drowsy, window over, connection open": {idle: 40 * time.Minute, st: drowsy, openConns: 1, want: want{actNone, "Drowsy"}},
		"asleep stays asleep":                  {idle: 50 * time.Hour, st: asleep, want: want{actNone, "Asleep"}},
		"a team pod keeps it awake":            {idle: 50 * time.Hour, st: state{replicas: 1, workloadPods: 2}, want: want{actNone, "Awake"}},
		"a team pod ends the probe":            {idle: 29 * time.Minute, st: state{routed: true, replicas: 1, workloadPods: 1}, want: want{actUnroute, "Awake"}},
		"a team pod wakes a sleeping cluster":  {idle: 50 * time.Hour, st: state{routed: true, workloadPods: 1}, want: want{actWake, "Waking"}},
		"policy removed while drowsy":          {idle: time.Hour, st: drowsy, noPolicy: true, want: want{actUnroute, "Awake"}},
		"policy removed while asleep":          {idle: time.Hour, st: asleep, noPolicy: true, want: want{actWake, "Waking"}},
		"no policy, nothing to do":             {idle: time.Hour, st: awake, noPolicy: true, want: want{actNone, ""}},
	} {
		t.Run(name, func(t *testing.T) {
			in := input{now: t0.Add(tc.idle), lastActivity: t0, sleepAfter: after, probe: probe, openConns: tc.openConns, state: tc.st}
			if tc.noPolicy {
				in.sleepAfter = 0
			}
			act, reason, msg := decide(in)
			if diff := cmp.Diff(tc.want, want{act, reason}); diff != "" {
				t.Errorf("decide (-want +got):\n%s\nmessage: %s", diff, msg)
			}
			if reason != "" && msg == "" {
				t.Error("a reason without a message")
			}
		})
	}
}
