package team

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/utils/ptr"

	gpuvcv1 "github.com/gpuvc/gpuvc/api/v1alpha1"
)

// TestDescribeShowsTheQueue: a queueing team's guarantee, use, borrowing and
// queued pods, and what it says before Kueue has reported.
func TestDescribeShowsTheQueue(t *testing.T) {
	tm := fraudTeam()
	tm.Spec.Queueing = &gpuvcv1.Queueing{BorrowingLimit: &gpuvcv1.GPUAmount{GPUs: ptr.To[int32](2)}}
	var b bytes.Buffer
	describe(&b, tm, created)
	require.Contains(t, b.String(), "Queue:       elastic: 6 GPUs guaranteed, may borrow 2 (no report from Kueue yet)\n")

	tm.Status.Queue = &gpuvcv1.QueueStatus{ClusterQueue: "gpuvc-fraud", GuaranteedGPUs: 6, BorrowingLimitGPUs: 2, UsedGPUs: 8, BorrowedGPUs: 2, AdmittedPods: 8, QueuedPods: 3}
	b.Reset()
	describe(&b, tm, created)
	require.Contains(t, b.String(), "Queue:       elastic: 6 GPUs guaranteed, 8 in use, 2 borrowed of 2 allowed; 8 pods admitted, 3 queued (ClusterQueue gpuvc-fraud)\n")

	// Per GPU kind, from a manager that reports it.
	tm.Status.Queue.WeightedShare = 250
	tm.Status.Queue.Flavors = []gpuvcv1.QueueFlavorStatus{
		{Flavor: "gpuvc-a100-gpu", Resource: "nvidia.com/gpu", Guaranteed: 6, BorrowingLimit: 2, Used: 8, Borrowed: 2, Queued: 3},
		{Flavor: "gpuvc-a100-mig-1g.10gb", Resource: "nvidia.com/mig-1g.10gb", Guaranteed: 2, Used: 0, Lent: 2},
	}
	b.Reset()
	describe(&b, tm, created)
	require.Contains(t, b.String(), "Queue:       elastic: 8 pods admitted, 3 queued; fair-share 250 (ClusterQueue gpuvc-fraud)\n"+
		"  RESOURCE                GUARANTEED  MAY BORROW  USED  BORROWED  LENT  QUEUED\n"+
		"  nvidia.com/gpu          6           2           8     2         0     3\n"+
		"  nvidia.com/mig-1g.10gb  2           0           0     0         2     0\n")

	b.Reset()
	describe(&b, fraudTeam(), created)
	require.NotContains(t, b.String(), "Queue:")
}

// The Kueue priority classes and extra tolerations a team's pods may keep
// (issue 22): the team's own priority and the built-in tolerations unless the
// Team lists more.
func TestDescribeShowsPrioritiesAndTolerations(t *testing.T) {
	tm := fraudTeam()
	var b bytes.Buffer
	describe(&b, tm, created)
	require.Contains(t, b.String(), "Tolerates:   its pool's taint and not-ready/unreachable for at most 300 s (nothing else: spec.placement.allowedTolerations)\n")
	require.NotContains(t, b.String(), "Priorities:")

	tm.Spec.Queueing = &gpuvcv1.Queueing{PriorityClasses: []string{"team-batch", "team-low"}}
	tm.Spec.Placement = &gpuvcv1.Placement{AllowedTolerations: []gpuvcv1.AllowedToleration{
		{Key: "example.com/maintenance", Value: "planned", Effect: "NoSchedule"},
		{Key: "nvidia.com/gpu", Operator: "Exists"},
	}}
	b.Reset()
	describe(&b, tm, created)
	require.Contains(t, b.String(), "Priorities:  team-batch, team-low (WorkloadPriorityClasses pods may name)\n")
	require.Contains(t, b.String(), "Tolerates:   its pool's taint and not-ready/unreachable for at most 300 s, and example.com/maintenance Equal planned:NoSchedule, nvidia.com/gpu Exists (any effect)\n")
}
