package idle

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gpuvcv1 "github.com/gpuvc/gpuvc/api/v1alpha1"
)

func TestSleptForTellsSinceWhenAndWhy(t *testing.T) {
	since := metav1.NewTime(time.Date(2026, 11, 28, 14, 36, 51, 0, time.UTC))
	asleep := &gpuvcv1.Team{Status: gpuvcv1.TeamStatus{Idle: &gpuvcv1.IdleStatus{AsleepSince: &since}}}
	require.Equal(t, "; it was asleep since 2026-11-28T14:36:51Z (put to sleep on request)", sleptFor(asleep, "put to sleep on request"))
	require.Equal(t, "; it was asleep since 2026-11-28T14:36:51Z", sleptFor(asleep, ""), "why is unknown after a manager restart")
	require.Empty(t, sleptFor(&gpuvcv1.Team{}, ""), "never asleep: nothing to add")
}
