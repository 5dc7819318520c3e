package localnode_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuvc/gpuvc/gpu/inventory"
	"github.com/gpuvc/gpuvc/kind/localnode"
)

// TestSimulatedGPUs: the kubelet advertises the simulated GPUs its device plugin
// registered, and a pod asking for one gets the device's UUID from Allocate.
func TestSimulatedGPUs(t *testing.T) {
	cp := forTest(t)
	ctx := testContext(t)
	n := startNode(t, ctx, cp, localnode.Options{GPUs: &inventory.Spec{
		Product: "NVIDIA-A100-SXM4-80GB",
		Count:   5,
		MIG:     []string{"all-disabled", "all-disabled", "all-disabled", "all-disabled", "2x1g.10gb"},
	}})
	node, err := cp.Client.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{})
	require.NoError(t, err)
	for res, want := range map[corev1.ResourceName]int64{"nvidia.com/gpu": 4, "nvidia.com/mig-1g.10gb": 2} {
		got := node.Status.Allocatable[res]
		require.Equal(t, want, got.Value(), "allocatable %s", res)
	}
	require.Equal(t, "NVIDIA-A100-SXM4-80GB", node.Labels["nvidia.com/gpu.product"])

	var gpuUUIDs, migUUIDs []string
	for _, g := range n.Inventory.GPUs {
		if !g.MIG.Enabled {
			gpuUUIDs = append(gpuUUIDs, g.UUID)
		}
		for _, gi := range g.MIG.Instances {
			for _, d := range gi.Devices {
				migUUIDs = append(migUUIDs, d.UUID)
			}
		}
	}
	ns := namespace(t, ctx, cp, "gpus")
	for _, tc := range []struct {
		pod   string
		limit func(*podWrapper) *podWrapper
		uuids []string
	}{
		{"whole-gpu", func(p *podWrapper) *podWrapper { return p.GPUs("1") }, gpuUUIDs},
		{"mig-slice", func(p *podWrapper) *podWrapper { return p.MIG("1g.10gb", "1") }, migUUIDs},
	} {
		t.Run(tc.pod, func(t *testing.T) {
			pod := tc.limit(workloadPod(tc.pod, ns, "echo visible=$NVIDIA_VISIBLE_DEVICES; exec sleep 3600")).Obj()
			runPod(t, ctx, cp, pod)
			logs, err := podLogs(ctx, cp, ns, tc.pod)
			require.NoError(t, err)
			require.Contains(t, tc.uuids, trimPrefixLine(logs, "visible="), "logs: %q", logs)
		})
	}
}
