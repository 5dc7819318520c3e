package suite

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuvc/gpuvc/api/contract"
	"github.com/gpuvc/gpuvc/e2e/testsupport/testobj"
)

// draDevicesResource is the team quota's resource for gpu.nvidia.com claims.
const draDevicesResource = corev1.ResourceName(contract.DeviceClassGPU + contract.DeviceClassQuotaSuffix)

// TestDRATeamOnTheRealNode: the local stack installs gpuvc with vcluster.dra, so
// a spec.dra team's vCluster installs (without the value Helm, as the manager,
// is forbidden to create vCluster's DeviceClass ClusterRole) and the team is
// Ready; its quota bounds its gpu.nvidia.com devices by spec.quota.gpus, and
// its own API server serves resource.k8s.io/v1 to it.
//
// What it does not show, and why: vCluster OSS v0.36.1 starts no syncer for
// resourceClaims, resourceClaimTemplates or deviceClasses although the team's
// vCluster config enables them (upstream lists the three among its Pro
// features), so a template created through the team's kubeconfig never reaches
// the host and a pod naming it is never admitted there (docs/dra.md, "Through
// a team's own cluster").
func TestDRATeamOnTheRealNode(t *testing.T) {
	ctx := e2e(t)
	needsRunningContainers(t)
	const team = "claims"
	createTeam(ctx, t, team, "--pool", realPool, "--gpus", "1", "--dra")

	q, err := backend.Client().CoreV1().ResourceQuotas("team-"+team).Get(ctx, "gpuvc-quota", metav1.GetOptions{})
	require.NoError(t, err)
	hard := q.Spec.Hard[draDevicesResource]
	require.Equal(t, int64(1), hard.Value(), "quota %s on %s: %v", q.Name, draDevicesResource, q.Spec.Hard)
	eventually(ctx, t, "the quota counting the team's DRA devices", func(ctx context.Context) (bool, string) {
		q, err := backend.Client().CoreV1().ResourceQuotas("team-"+team).Get(ctx, "gpuvc-quota", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		used, ok := q.Status.Used[draDevicesResource]
		return ok && used.Value() == 0, fmt.Sprintf("used: %v", q.Status.Used)
	})

	vc := teamClient(t, teamKubeconfig(t, team))
	_, err = vc.ResourceV1().ResourceClaimTemplates("default").Create(ctx,
		testobj.ClaimSpec().Devices("gpu", contract.DeviceClassGPU, 1).Template("one-gpu", "default"), metav1.CreateOptions{})
	require.NoError(t, err, "the team's own API server serves resource.k8s.io/v1")
}
