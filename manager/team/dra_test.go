package team_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/gpuvc/gpuvc/e2e/testsupport/testobj"
	"github.com/gpuvc/gpuvc/manager/team"
	"github.com/gpuvc/gpuvc/syncer/celpolicy"
)

// A spec.dra team, reconciled by the real manager: its quota holds each
// allowed DeviceClass at the whole-GPU quota, its CEL parameters let its
// claims through the fences, and its vCluster (the real chart, installed by
// Helm) syncs claims and claim templates and shows DeviceClasses.
func TestDRATeamIsProvisionedForClaims(t *testing.T) {
	ctx := integration(t)
	createTeam(ctx, t, testobj.Team("claims", "a100").GPUs(3).DRA().Obj())
	hostNS := "team-claims"

	quota := &corev1.ResourceQuota{}
	get(ctx, t, inNS(hostNS, team.QuotaName), quota, nil)
	class := quota.Spec.Hard[team.DeviceClassResource("gpu.nvidia.com")]
	require.Equal(t, int64(3), class.Value(), "quota %v", quota.Spec.Hard)

	params := &corev1.ConfigMap{}
	get(ctx, t, inNS(hostNS, celpolicy.ParamsName), params, nil)
	require.Equal(t, "true", params.Data[celpolicy.KeyDRA])
	require.Equal(t, "gpu.nvidia.com", params.Data[celpolicy.KeyDeviceClasses])

	secret := &corev1.Secret{}
	get(ctx, t, inNS(hostNS, "vc-config-claims"), secret, nil)
	var cfg struct {
		Sync struct {
			ToHost struct {
				ResourceClaims, ResourceClaimTemplates struct{ Enabled bool }
			} `json:"toHost"`
			FromHost struct {
				DeviceClasses struct{ Enabled bool }
			} `json:"fromHost"`
		} `json:"sync"`
	}
	require.NoError(t, yaml.Unmarshal(secret.Data["config.yaml"], &cfg))
	require.True(t, cfg.Sync.ToHost.ResourceClaims.Enabled && cfg.Sync.ToHost.ResourceClaimTemplates.Enabled && cfg.Sync.FromHost.DeviceClasses.Enabled,
		"vCluster config %s", secret.Data["config.yaml"])
}
