package team

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gpuvcv1 "github.com/gpuvc/gpuvc/api/v1alpha1"
)

func TestIdleLine(t *testing.T) {
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	sleepy := gpuvcv1.Team{Spec: gpuvcv1.TeamSpec{Idle: &gpuvcv1.Idle{VCluster: &gpuvcv1.VClusterIdle{SleepAfter: metav1.Duration{Duration: 30 * time.Minute}}}}}
	asleep := *sleepy.DeepCopy()
	asleep.Status.Conditions = []metav1.Condition{{Type: gpuvcv1.ConditionAsleep, Status: metav1.ConditionTrue, Reason: gpuvcv1.ReasonAsleep,
		LastTransitionTime: metav1.NewTime(now.Add(-2 * time.Hour))}}
	asleep.Status.Idle = &gpuvcv1.IdleStatus{LastWake: &gpuvcv1.Wake{At: metav1.NewTime(now.Add(-3 * time.Hour)), Latency: metav1.Duration{Duration: 21340 * time.Millisecond}}}
	drowsy := *sleepy.DeepCopy()
	drowsy.Status.Conditions = []metav1.Condition{{Type: gpuvcv1.ConditionAsleep, Status: metav1.ConditionFalse, Reason: gpuvcv1.ReasonDrowsy, Message: "idle for 26m"}}
	gpu := gpuvcv1.Team{Spec: gpuvcv1.TeamSpec{Idle: &gpuvcv1.Idle{GPUPods: &gpuvcv1.GPUPodIdle{After: metav1.Duration{Duration: time.Hour}, Action: "Evict", MaxUtilizationPercent: 5}}}}
	wholeTeam := *sleepy.DeepCopy()
	wholeTeam.Spec.Idle.GPUPods = &gpuvcv1.GPUPodIdle{After: metav1.Duration{Duration: 10 * time.Minute}, Action: gpuvcv1.IdleActionSleep}
	for name, tc := range map[string]struct {
		team gpuvcv1.Team
		want string
	}{
		"off":                {gpuvcv1.Team{}, "off: the vCluster runs until the team is deleted"},
		"not reported yet":   {sleepy, "sleeps after 30m0s idle"},
		"asleep, woken once": {asleep, "asleep for 120m (sleeps after 30m0s idle); the next request wakes it; last wake took 21.3s, 3h ago"},
		"drowsy":             {drowsy, "drowsy (sleeps after 30m0s idle): idle for 26m"},
		"GPU pods":           {gpu, "GPU pods at or below 5% utilization for 1h0m0s: evict"},
		"whole team":         {wholeTeam, "sleeps after 30m0s idle; GPU pods at or below 0% utilization for 10m0s: sleep the whole team once all of them are (its pods evicted; one idle while another is busy is notified)"},
	} {
		t.Run(name, func(t *testing.T) {
			if got := idleLine(&tc.team, now); got != tc.want {
				t.Errorf("idleLine:\n got %q\nwant %q", got, tc.want)
			}
		})
	}
}
