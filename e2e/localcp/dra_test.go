package localcp_test

import (
	"context"
	"sort"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuvc/gpuvc/api/contract"
	"github.com/gpuvc/gpuvc/e2e/localcp"
	"github.com/gpuvc/gpuvc/e2e/testsupport/poll"
	"github.com/gpuvc/gpuvc/e2e/testsupport/testobj"
	"github.com/gpuvc/gpuvc/kind/nodepool"
)

// TestDRAClaimOnAKwokNode: a kwok node whose GPUs are partly served through
// DRA advertises the others as nvidia.com/gpu and gets a ResourceSlice with
// the DRA ones; the scheduler allocates a pod's claim for two GPUs from that
// slice and binds the pod there, and a claim for one more waits.
func TestDRAClaimOnAKwokNode(t *testing.T) {
	cp := localcp.ForTest(t)
	ctx := poll.TestContext(t)
	const node = "dra-kwok-0"
	pool := nodepool.Pool{Name: "dra", Taint: true, Nodes: []nodepool.Node{{
		Name: node, CPU: "64", Memory: "512Gi", Pods: 110,
		GPU: &nodepool.GPUs{Product: nodepool.ProductH100_80GB, Count: 8, MemoryMiB: 81920, DRA: 2},
	}}}
	require.NoError(t, cp.AddNodes(ctx, []nodepool.Pool{pool}))
	t.Cleanup(func() { _ = cp.Client.CoreV1().Nodes().Delete(context.Background(), node, metav1.DeleteOptions{}) })

	n, err := cp.Client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	require.NoError(t, err)
	gpus := n.Status.Allocatable[contract.ResourceGPU]
	require.Equal(t, int64(6), gpus.Value(), "the device plugin's share of the 8 GPUs")
	slices, err := cp.Client.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + node})
	require.NoError(t, err)
	require.Len(t, slices.Items, 1)
	var published []string
	for _, d := range slices.Items[0].Spec.Devices {
		published = append(published, d.Name)
	}
	require.Equal(t, []string{"gpu-6", "gpu-7"}, published)

	ns := "dra-kwok"
	createNamespace(ctx, t, cp.Client, ns)
	tmpl := &resourceapi.ResourceClaimTemplate{
		ObjectMeta: metav1.ObjectMeta{Name: "two-gpus", Namespace: ns},
		Spec: resourceapi.ResourceClaimTemplateSpec{Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{
			Requests: []resourceapi.DeviceRequest{{Name: "gpus", Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: contract.DeviceClassGPU, Count: 2}}},
		}}},
	}
	_, err = cp.Client.ResourceV1().ResourceClaimTemplates(ns).Create(ctx, tmpl, metav1.CreateOptions{})
	require.NoError(t, err)

	pod := testobj.Pod("trainer", ns).InPool("dra").ResourceClaim("gpus", "two-gpus").Obj()
	_, err = cp.Client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
	require.NoError(t, err)
	got := waitForPod(ctx, t, cp.Client, ns, "trainer", running)
	require.Equal(t, node, got.Spec.NodeName)
	require.Len(t, got.Status.ResourceClaimStatuses, 1)
	claim, err := cp.Client.ResourceV1().ResourceClaims(ns).Get(ctx, *got.Status.ResourceClaimStatuses[0].ResourceClaimName, metav1.GetOptions{})
	require.NoError(t, err)
	require.NotNil(t, claim.Status.Allocation)
	var devices []string
	for _, r := range claim.Status.Allocation.Devices.Results {
		require.Equal(t, contract.DRADriver, r.Driver)
		require.Equal(t, node, r.Pool)
		devices = append(devices, r.Device)
	}
	sort.Strings(devices)
	require.Equal(t, []string{"gpu-6", "gpu-7"}, devices)

	more := testobj.Pod("more", ns).InPool("dra").ResourceClaim("gpus", "two-gpus").Obj()
	_, err = cp.Client.CoreV1().Pods(ns).Create(ctx, more, metav1.CreateOptions{})
	require.NoError(t, err)
	waitForPod(ctx, t, cp.Client, ns, "more", func(p *corev1.Pod) bool {
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
				return true
			}
		}
		return false
	})
}
