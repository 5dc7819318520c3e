package localnode_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/gpuvc/gpuvc/api/contract"
	"github.com/gpuvc/gpuvc/gpu/dra"
	"github.com/gpuvc/gpuvc/gpu/inventory"
	"github.com/gpuvc/gpuvc/kind/localcluster"
	"github.com/gpuvc/gpuvc/kind/localnode"
)

// TestDRAClaimsOnSimulatedGPUs: of four simulated GPUs the device plugin
// serves the first, the DRA kubelet plugin the last three (two whole, one
// in MIG mode). Plain pods with a ResourceClaimTemplate each run with the
// UUID of exactly the device allocated to their claim (through the CDI spec
// containerd applied), two pods get two different GPUs, a third waits, a MIG
// claim gets a MIG device, and a deleted pod's CDI spec is removed.
func TestDRAClaimsOnSimulatedGPUs(t *testing.T) {
	cp := forTest(t)
	ctx := testContext(t)
	require.NoError(t, dra.EnsureDeviceClasses(ctx, cp.Client))
	n := startNode(t, ctx, cp, localnode.Options{GPUs: &inventory.Spec{
		Product: "NVIDIA-A100-SXM4-80GB", Count: 4, DRA: 3,
		MIG: []string{"all-disabled", "all-disabled", "all-disabled", "all-balanced"},
	}})

	node, err := cp.Client.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{})
	require.NoError(t, err)
	q := node.Status.Allocatable[contract.ResourceGPU]
	require.Equal(t, int64(1), q.Value(), "the device plugin serves GPU 0 only")
	uuids := map[string]string{} // device name -> UUID
	for _, d := range dra.Devices(n.Inventory) {
		uuids[d.Name] = d.UUID
	}
	require.Len(t, uuids, 6, "gpu-1, gpu-2 and GPU 3's four MIG devices")

	ns := namespace(t, ctx, cp, "dra")
	template(t, ctx, cp, ns, "one-gpu", contract.DeviceClassGPU)
	template(t, ctx, cp, ns, "one-mig", contract.DeviceClassMIG)
	script := "echo visible=$NVIDIA_VISIBLE_DEVICES; env | grep ^" + contract.EnvDRADevicePrefix + " | sed 's/^/dra:/'; exec sleep 3600"

	seen := map[string]string{} // UUID -> pod
	for _, tc := range []struct{ pod, template, typ string }{
		{"first", "one-gpu", contract.DRATypeGPU},
		{"second", "one-gpu", contract.DRATypeGPU},
		{"mig", "one-mig", contract.DRATypeMIG},
	} {
		t.Run(tc.pod, func(t *testing.T) {
			pod := workloadPod(tc.pod, ns, script).ResourceClaim("gpu", tc.template).Obj()
			got, _ := runPod(t, ctx, cp, pod)
			device, claim := allocated(t, ctx, cp, got)
			require.Equal(t, tc.typ, deviceType(device), "device %s", device)
			want, ok := uuids[device]
			require.True(t, ok, "claim allocated %s, not a DRA device of the node", device)

			logs, err := podLogs(ctx, cp, ns, tc.pod)
			require.NoError(t, err)
			require.Equal(t, want, trimPrefixLine(logs, "visible="), "NVIDIA_VISIBLE_DEVICES in pod %s; logs %q", tc.pod, logs)
			require.Equal(t, []string{dra.DeviceEnv(device) + "=" + want}, prefixedLines(logs, "dra:"), "the pod sees its device only")
			if other, dup := seen[want]; dup {
				t.Fatalf("pods %s and %s both got %s", other, tc.pod, want)
			}
			seen[want] = tc.pod
			_, err = os.Stat(filepath.Join(n.Dir, "cdi", "gpuvc-dra-"+string(claim.UID)+".json"))
			require.NoError(t, err, "the claim's CDI spec in containerd's CDI folder")
		})
	}

	// Two whole GPUs are served through DRA and both are taken: a third claim waits.
	third := workloadPod("third", ns, "exec sleep 3600").ResourceClaim("gpu", "one-gpu").Obj()
	_, err = cp.Client.CoreV1().Pods(ns).Create(ctx, third, metav1.CreateOptions{})
	require.NoError(t, err)
	waitPod(t, ctx, cp, ns, "third", func(p *corev1.Pod) bool {
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
				return true
			}
		}
		return false
	})

	// Deleting the first pod unprepares its claim: the CDI spec goes, and the
	// waiting pod gets the freed GPU.
	first, err := cp.Client.CoreV1().Pods(ns).Get(ctx, "first", metav1.GetOptions{})
	require.NoError(t, err)
	_, claim := allocated(t, ctx, cp, first)
	require.NoError(t, cp.Client.CoreV1().Pods(ns).Delete(ctx, "first", metav1.DeleteOptions{}))
	spec := filepath.Join(n.Dir, "cdi", "gpuvc-dra-"+string(claim.UID)+".json")
	require.NoError(t, wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		_, err := os.Stat(spec)
		return os.IsNotExist(err), nil
	}), "CDI spec %s still there after the pod was deleted", spec)
	waitPod(t, ctx, cp, ns, "third", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning })
}

// template creates a ResourceClaimTemplate asking for one device of class.
func template(t *testing.T, ctx context.Context, cp *localcluster.ControlPlane, ns, name, class string) {
	t.Helper()
	tmpl := &resourceapi.ResourceClaimTemplate{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: resourceapi.ResourceClaimTemplateSpec{Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{
			Requests: []resourceapi.DeviceRequest{{Name: "gpu", Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: class}}},
		}}},
	}
	_, err := cp.Client.ResourceV1().ResourceClaimTemplates(ns).Create(ctx, tmpl, metav1.CreateOptions{})
	require.NoError(t, err)
}

// allocated returns the device allocated to the pod's claim, and the claim.
func allocated(t *testing.T, ctx context.Context, cp *localcluster.ControlPlane, pod *corev1.Pod) (string, *resourceapi.ResourceClaim) {
	t.Helper()
	require.Len(t, pod.Status.ResourceClaimStatuses, 1, "pod %s claim statuses", pod.Name)
	name := pod.Status.ResourceClaimStatuses[0].ResourceClaimName
	require.NotNil(t, name, "pod %s has no claim yet", pod.Name)
	claim, err := cp.Client.ResourceV1().ResourceClaims(pod.Namespace).Get(ctx, *name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		t.Fatalf("claim %s of pod %s is gone", *name, pod.Name)
	}
	require.NoError(t, err)
	require.NotNil(t, claim.Status.Allocation, "claim %s not allocated", claim.Name)
	results := claim.Status.Allocation.Devices.Results
	require.Len(t, results, 1)
	require.Equal(t, contract.DRADriver, results[0].Driver)
	require.Equal(t, pod.Spec.NodeName, results[0].Pool, "the pool is the node's")
	return results[0].Device, claim
}

func deviceType(device string) string {
	if strings.Contains(device, "-mig-") {
		return contract.DRATypeMIG
	}
	return contract.DRATypeGPU
}

// prefixedLines returns what follows prefix on every line starting with it.
func prefixedLines(text, prefix string) []string {
	var out []string
	for _, line := range strings.Split(text, "\n") {
		if v, ok := strings.CutPrefix(line, prefix); ok {
			out = append(out, v)
		}
	}
	return out
}
