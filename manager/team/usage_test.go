package team_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	gpuvcv1 "github.com/gpuvc/gpuvc/api/v1alpha1"
	"github.com/gpuvc/gpuvc/e2e/testsupport/testobj"
	"github.com/gpuvc/gpuvc/manager/team"
)

// The Team's status follows the GPUs its pods request (the quota's usage, as
// the API server's quota admission counts them): the quota watch passes GPU
// changes, though it drops the changes of CPU pods.
func TestStatusFollowsTheTeamsGPURequests(t *testing.T) {
	ctx := integration(t)
	createTeam(ctx, t, testobj.Team("use", "a100").GPUs(2).Obj())
	get(ctx, t, inNS("team-use", team.QuotaName), &corev1.ResourceQuota{}, nil)

	cpu := testobj.Pod("cpu", "team-use").Obj()
	require.NoError(t, c.Create(ctx, cpu))
	gpu := testobj.Pod("gpu", "team-use").GPUs("1").Obj()
	require.NoError(t, c.Create(ctx, gpu))
	tm := &gpuvcv1.Team{}
	get(ctx, t, ns("use"), tm, func() (bool, string) {
		u := tm.Status.GPUUsage
		return u != nil && u.GPUs == 1, "status.gpuUsage not 1 GPU yet"
	})
}
