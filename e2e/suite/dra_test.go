package suite

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/gpuvc/gpuvc/api/contract"
	"github.com/gpuvc/gpuvc/e2e/testsupport/testobj"
	"github.com/gpuvc/gpuvc/manager/teamclaims"
)

// draDevicesResource is the team quota's resource for gpu.nvidia.com claims.
const draDevicesResource = corev1.ResourceName(contract.DeviceClassGPU + contract.DeviceClassQuotaSuffix)

// needsDRADriver skips a test where the real node publishes no gpu.nvidia.com
// devices (a backend without the DRA kubelet plugin, gpu/dra).
func needsDRADriver(ctx context.Context, t *testing.T) {
	t.Helper()
	needsRunningContainers(t)
	slices, err := backend.Client().ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	for _, s := range slices.Items {
		if s.Spec.Driver == contract.DRADriver && s.Spec.NodeName != nil && *s.Spec.NodeName == realNodeName {
			return
		}
	}
	t.Skipf("no %s ResourceSlice of node %s: the %s runs no DRA driver for its GPUs", contract.DRADriver, realNodeName, backend.Name())
}

// draScript prints what the simulated driver hands the container.
const draScript = "echo NVIDIA_VISIBLE_DEVICES=$NVIDIA_VISIBLE_DEVICES; env | grep ^" + contract.EnvDRADevicePrefix + " | sort; exec sleep 3600"

// TestDRATeamPodRunsWithItsClaimedDevice: a spec.dra team, through its own
// kubeconfig only, sees the DeviceClasses it may use, makes a
// ResourceClaimTemplate, and runs a pod naming it. gpuvc's manager copies the
// template to the host under the name vCluster's pod translator writes into
// the host pod; the host's resource claim controller makes the claim, the
// scheduler allocates a device of the real node, and the container sees
// exactly that device's UUID. The quota counts the one device; what breaks the
// fence is refused with a warning the team sees; a second team gets another
// device.
func TestDRATeamPodRunsWithItsClaimedDevice(t *testing.T) {
	ctx := e2e(t)
	needsDRADriver(ctx, t)
	const team = "claims"
	hostNS := "team-" + team
	createTeam(ctx, t, team, "--pool", realPool, "--gpus", "1", "--dra")
	vc := teamClient(t, teamKubeconfig(t, team))

	q, err := backend.Client().CoreV1().ResourceQuotas(hostNS).Get(ctx, "gpuvc-quota", metav1.GetOptions{})
	require.NoError(t, err)
	hard := q.Spec.Hard[draDevicesResource]
	require.Equal(t, int64(1), hard.Value(), "quota %s on %s: %v", q.Name, draDevicesResource, q.Spec.Hard)

	eventually(ctx, t, "the team's cluster showing the DeviceClasses it may use, and no other", func(ctx context.Context) (bool, string) {
		l, err := vc.ResourceV1().DeviceClasses().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		var names []string
		for _, c := range l.Items {
			names = append(names, c.Name)
		}
		return slices.Equal(names, []string{contract.DeviceClassGPU}), fmt.Sprint(names)
	})

	_, err = vc.ResourceV1().ResourceClaimTemplates("default").Create(ctx,
		testobj.ClaimSpec().Devices("gpu", contract.DeviceClassGPU, 1).Template("one-gpu", "default"), metav1.CreateOptions{})
	require.NoError(t, err, "creating a ResourceClaimTemplate through the team's kubeconfig")
	hostTemplate := teamclaims.HostName("one-gpu", "default", team)
	eventually(ctx, t, "the template copied to the host", func(ctx context.Context) (bool, string) {
		_, err := backend.Client().ResourceV1().ResourceClaimTemplates(hostNS).Get(ctx, hostTemplate, metav1.GetOptions{})
		return err == nil, fmt.Sprint(err)
	})

	host, err := submitVirtualPod(ctx, t, team, workload("dra", draScript).ResourceClaim("gpu", "one-gpu").Obj())
	require.NoError(t, err)
	require.Equal(t, hostTemplate, *host.Spec.ResourceClaims[0].ResourceClaimTemplateName,
		"vCluster's pod translator names the template as gpuvc copied it")
	v := waitVirtualPod(ctx, t, vc, "dra", running)
	h, err := backend.Client().CoreV1().Pods(hostNS).Get(ctx, host.Name, metav1.GetOptions{})
	require.NoError(t, err)
	require.Equal(t, realNodeName, h.Spec.NodeName)
	claim := hostClaimOf(ctx, t, h)
	require.NotNil(t, claim.Status.Allocation, "host claim %s is not allocated", claim.Name)
	results := claim.Status.Allocation.Devices.Results
	require.Len(t, results, 1, "one device allocated to host claim %s", claim.Name)
	require.Equal(t, contract.DRADriver, results[0].Driver)
	uuid := sliceUUID(ctx, t, results[0].Pool, results[0].Device)
	out := logs(ctx, t, vc, v.Name)
	require.Contains(t, out, "NVIDIA_VISIBLE_DEVICES="+uuid+"\n", "the container sees the device of host claim %s (%s)", claim.Name, results[0].Device)
	require.Contains(t, out, "="+uuid+"\n")
	require.Contains(t, out, contract.EnvDRADevicePrefix+strings.ToUpper(strings.ReplaceAll(results[0].Device, "-", "_"))+"="+uuid)
	// What the team sees of the claim made from its template: vCluster copies
	// the host pod's claim status, with the host claim's name (docs/dra.md).
	v = waitVirtualPod(ctx, t, vc, "dra", func(p *corev1.Pod) bool {
		return len(p.Status.ResourceClaimStatuses) == 1 && p.Status.ResourceClaimStatuses[0].ResourceClaimName != nil
	})
	require.Equal(t, claim.Name, *v.Status.ResourceClaimStatuses[0].ResourceClaimName)
	t.Logf("team pod %s: host claim %s, device %s (%s)", v.Name, claim.Name, results[0].Device, uuid)

	eventually(ctx, t, "the team's quota charging the device once", func(ctx context.Context) (bool, string) {
		q, err := backend.Client().CoreV1().ResourceQuotas(hostNS).Get(ctx, "gpuvc-quota", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		used := q.Status.Used[draDevicesResource]
		return used.Value() == 1, fmt.Sprintf("used %s = %s", draDevicesResource, used.String())
	})

	t.Run("a claim beyond the team's GPUs is refused", func(t *testing.T) {
		claimRefused(ctx, t, vc, team, testobj.ClaimSpec().Devices("gpu", contract.DeviceClassGPU, 1).Claim("more", "default"), "GPUCeilingExceeded")
	})
	t.Run("a claim of every device is refused", func(t *testing.T) {
		claimRefused(ctx, t, vc, team, testobj.ClaimSpec().AllDevices("every", contract.DeviceClassGPU).Claim("every", "default"),
			"spec.devices.requests[0].exactly.allocationMode=All")
	})
	t.Run("a claim of a class the team may not use is refused", func(t *testing.T) {
		claimRefused(ctx, t, vc, team, testobj.ClaimSpec().Devices("slice", contract.DeviceClassMIG, 1).Claim("slice", "default"),
			"spec.devices.requests[0].exactly.deviceClassName="+contract.DeviceClassMIG)
	})
	t.Run("a template with admin access is refused", func(t *testing.T) {
		// The team may label its own namespace for admin access; the host
		// namespace is not, and gpuvc's fences refuse it even where it is.
		ns, err := vc.CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{})
		require.NoError(t, err)
		if ns.Labels == nil {
			ns.Labels = map[string]string{}
		}
		ns.Labels[resourcev1.DRAAdminNamespaceLabelKey] = "true"
		_, err = vc.CoreV1().Namespaces().Update(ctx, ns, metav1.UpdateOptions{})
		require.NoError(t, err)
		tmpl := testobj.ClaimSpec().Devices("gpu", contract.DeviceClassGPU, 1).AdminAccess().Template("admin", "default")
		_, err = vc.ResourceV1().ResourceClaimTemplates("default").Create(ctx, tmpl, metav1.CreateOptions{})
		require.NoError(t, err)
		t.Cleanup(func() {
			_ = vc.ResourceV1().ResourceClaimTemplates("default").Delete(context.Background(), "admin", metav1.DeleteOptions{})
		})
		warned(ctx, t, vc, "admin", "adminAccess")
	})
	t.Run("a claim of another namespace is not found", func(t *testing.T) {
		_, err := vc.CoreV1().Namespaces().Create(ctx, testobj.Namespace("other", nil), metav1.CreateOptions{})
		require.NoError(t, err)
		t.Cleanup(func() { _ = vc.CoreV1().Namespaces().Delete(context.Background(), "other", metav1.DeleteOptions{}) })
		_, err = vc.ResourceV1().ResourceClaims("other").Create(ctx, testobj.ClaimSpec().Devices("gpu", contract.DeviceClassGPU, 1).Claim("theirs", "other"), metav1.CreateOptions{})
		require.NoError(t, err)
		_, err = submitVirtualPod(ctx, t, team, workload("foreign", draScript).NamedResourceClaim("gpu", "theirs").Obj())
		require.Error(t, err, "a pod naming another namespace's claim is refused on the host")
		require.Contains(t, err.Error(), "ResourceClaimNotFound")
	})
	t.Run("a second team gets another device", func(t *testing.T) {
		const team2 = "claims2"
		createTeam(ctx, t, team2, "--pool", realPool, "--gpus", "1", "--dra")
		vc2 := teamClient(t, teamKubeconfig(t, team2))
		_, err := vc2.ResourceV1().ResourceClaimTemplates("default").Create(ctx,
			testobj.ClaimSpec().Devices("gpu", contract.DeviceClassGPU, 1).Template("one-gpu", "default"), metav1.CreateOptions{})
		require.NoError(t, err)
		eventually(ctx, t, "team "+team2+"'s template copied to the host", func(ctx context.Context) (bool, string) {
			_, err := backend.Client().ResourceV1().ResourceClaimTemplates("team-"+team2).Get(ctx, teamclaims.HostName("one-gpu", "default", team2), metav1.GetOptions{})
			return err == nil, fmt.Sprint(err)
		})
		host2, err := submitVirtualPod(ctx, t, team2, workload("dra", draScript).ResourceClaim("gpu", "one-gpu").Obj())
		require.NoError(t, err)
		waitVirtualPod(ctx, t, vc2, "dra", running)
		h2, err := backend.Client().CoreV1().Pods("team-"+team2).Get(ctx, host2.Name, metav1.GetOptions{})
		require.NoError(t, err)
		claim2 := hostClaimOf(ctx, t, h2)
		require.NotNil(t, claim2.Status.Allocation)
		r2 := claim2.Status.Allocation.Devices.Results
		require.Len(t, r2, 1)
		require.NotEqual(t, results[0].Device, r2[0].Device, "two teams were given the same device")
		require.Contains(t, logs(ctx, t, vc2, "dra"), "NVIDIA_VISIBLE_DEVICES="+sliceUUID(ctx, t, r2[0].Pool, r2[0].Device)+"\n")
	})
}

// hostClaimOf returns the host ResourceClaim the pod's status names, once it
// names one.
func hostClaimOf(ctx context.Context, t *testing.T, pod *corev1.Pod) *resourcev1.ResourceClaim {
	t.Helper()
	var c *resourcev1.ResourceClaim
	eventually(ctx, t, "host pod "+pod.Name+"'s claim", func(ctx context.Context) (bool, string) {
		p, err := backend.Client().CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		if len(p.Status.ResourceClaimStatuses) != 1 || p.Status.ResourceClaimStatuses[0].ResourceClaimName == nil {
			return false, fmt.Sprintf("claim statuses %v", p.Status.ResourceClaimStatuses)
		}
		c, err = backend.Client().ResourceV1().ResourceClaims(pod.Namespace).Get(ctx, *p.Status.ResourceClaimStatuses[0].ResourceClaimName, metav1.GetOptions{})
		return err == nil, fmt.Sprint(err)
	})
	return c
}

// sliceUUID is the uuid attribute the real node's ResourceSlice of pool gives
// device.
func sliceUUID(ctx context.Context, t *testing.T, pool, device string) string {
	t.Helper()
	slices, err := backend.Client().ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	for _, s := range slices.Items {
		if s.Spec.Driver != contract.DRADriver || s.Spec.Pool.Name != pool || s.Spec.NodeName == nil || *s.Spec.NodeName != realNodeName {
			continue
		}
		for _, d := range s.Spec.Devices {
			if d.Name == device {
				a := d.Attributes[contract.DRAAttributeUUID]
				require.NotNil(t, a.StringValue, "device %s has no uuid attribute", device)
				return *a.StringValue
			}
		}
	}
	t.Fatalf("no ResourceSlice of node %s, pool %s lists device %s", realNodeName, pool, device)
	return ""
}

// claimRefused creates claim through the team's kubeconfig: the team's API
// server stores it, the host refuses gpuvc's copy, and the refusal reaches the
// team as a warning event on its claim; the host never holds the claim.
func claimRefused(ctx context.Context, t *testing.T, vc kubernetes.Interface, team string, claim *resourcev1.ResourceClaim, says string) {
	t.Helper()
	_, err := vc.ResourceV1().ResourceClaims("default").Create(ctx, claim, metav1.CreateOptions{})
	require.NoError(t, err, "the team's own API server stores claim %s", claim.Name)
	t.Cleanup(func() {
		_ = vc.ResourceV1().ResourceClaims("default").Delete(context.Background(), claim.Name, metav1.DeleteOptions{})
	})
	warned(ctx, t, vc, claim.Name, says)
	_, err = backend.Client().ResourceV1().ResourceClaims("team-"+team).Get(ctx, teamclaims.HostName(claim.Name, "default", team), metav1.GetOptions{})
	require.Error(t, err, "the refused claim reached the host")
}

// warned waits for a warning event in the team's namespace default on object
// name whose message says says.
func warned(ctx context.Context, t *testing.T, vc kubernetes.Interface, name, says string) {
	t.Helper()
	eventually(ctx, t, "a warning on "+name+" saying "+says, func(ctx context.Context) (bool, string) {
		events, err := vc.CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + name + ",type=Warning"})
		if err != nil {
			return false, err.Error()
		}
		var msgs []string
		for _, e := range events.Items {
			if strings.Contains(e.Message, says) {
				t.Logf("the team sees: %s: %s", e.Reason, e.Message)
				return true, ""
			}
			msgs = append(msgs, e.Reason+": "+e.Message)
		}
		return false, fmt.Sprint(msgs)
	})
}
