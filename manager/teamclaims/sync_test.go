package teamclaims_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gpuvc/gpuvc/api/contract"
	"github.com/gpuvc/gpuvc/e2e/localcp"
	"github.com/gpuvc/gpuvc/e2e/testsupport/testobj"
	"github.com/gpuvc/gpuvc/manager/teamclaims"
)

func newTeam(namespace, release string, classes ...string) *teamclaims.Team {
	return &teamclaims.Team{Virtual: env.virtual.Client, Host: env.host.Client, Namespace: namespace, Release: release, Classes: classes}
}

// TestCopiesUnderThePodTranslatorsNames: a virtual template and claim reach
// the host under the names vCluster writes into host pods, labelled and
// annotated as vCluster's copies and gpuvc's, with the tenant's spec; the
// tenant's gpuvc.dev/ and vcluster.loft.sh/ keys stay out of the claims a
// template makes. A copy goes when its virtual object goes, a stale copy of a
// recreated object is replaced, and a copy nothing in the team's cluster
// stands for (a manager restart missed the delete) is removed, while a host
// claim the resource claim controller made (owned by a pod) is left alone.
func TestCopiesUnderThePodTranslatorsNames(t *testing.T) {
	ctx := localcp.Context(t, 2*time.Minute)
	ns := hostNamespace(ctx, t, "copies-host")
	vns := virtualNamespace(ctx, t, "copies")
	s := newTeam(ns, "copies", contract.DeviceClassGPU)
	vc, hc := env.virtual.Client.ResourceV1(), env.host.Client.ResourceV1()

	tmpl := testobj.ClaimSpec().Devices("gpu", contract.DeviceClassGPU, 1).Template("one-gpu", vns)
	tmpl.Spec.ObjectMeta.Labels = map[string]string{"app": "train", contract.LabelDRACopy: "true", contract.LabelVClusterManagedBy: "copies"}
	vt, err := vc.ResourceClaimTemplates(vns).Create(ctx, tmpl, metav1.CreateOptions{})
	require.NoError(t, err)
	vcl, err := vc.ResourceClaims(vns).Create(ctx, testobj.ClaimSpec().Devices("gpu", contract.DeviceClassGPU, 1).Claim("shared", vns), metav1.CreateOptions{})
	require.NoError(t, err)
	orphan := testobj.ClaimSpec().Devices("gpu", contract.DeviceClassGPU, 1).Claim("orphan", ns)
	orphan.Labels = map[string]string{contract.LabelDRACopy: "true"}
	_, err = hc.ResourceClaims(ns).Create(ctx, orphan, metav1.CreateOptions{})
	require.NoError(t, err)
	made := testobj.ClaimSpec().Devices("gpu", contract.DeviceClassGPU, 1).Claim("made-from-template", ns)
	made.Labels = map[string]string{contract.LabelDRACopy: "true"}
	made.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: "p", UID: "0c1d"}}
	_, err = hc.ResourceClaims(ns).Create(ctx, made, metav1.CreateOptions{})
	require.NoError(t, err)

	require.NoError(t, s.Sync(ctx))

	ht, err := hc.ResourceClaimTemplates(ns).Get(ctx, teamclaims.HostName("one-gpu", vns, "copies"), metav1.GetOptions{})
	require.NoError(t, err, "the template's copy under the pod translator's name")
	require.Equal(t, vt.Spec.Spec, ht.Spec.Spec)
	require.Equal(t, map[string]string{"app": "train"}, ht.Spec.ObjectMeta.Labels, "the claims made from the copy keep the tenant's own labels only")
	require.Equal(t, "copies", ht.Labels[contract.LabelVClusterManagedBy])
	require.Equal(t, vns, ht.Labels[contract.KeyVClusterNamespace])
	require.Equal(t, "true", ht.Labels[contract.LabelDRACopy])
	require.Equal(t, "one-gpu", ht.Annotations["vcluster.loft.sh/object-name"])
	require.Equal(t, string(vt.UID), ht.Annotations["vcluster.loft.sh/object-uid"])
	hcl, err := hc.ResourceClaims(ns).Get(ctx, teamclaims.HostName("shared", vns, "copies"), metav1.GetOptions{})
	require.NoError(t, err, "the claim's copy under the pod translator's name")
	require.Equal(t, vcl.Spec, hcl.Spec)
	_, err = hc.ResourceClaims(ns).Get(ctx, "orphan", metav1.GetOptions{})
	require.True(t, apierrors.IsNotFound(err), "a copy of nothing is removed: %v", err)
	_, err = hc.ResourceClaims(ns).Get(ctx, "made-from-template", metav1.GetOptions{})
	require.NoError(t, err, "a claim owned by a pod is not gpuvc's to remove")

	// Deleted and created again under its name: the old copy is replaced.
	require.NoError(t, vc.ResourceClaims(vns).Delete(ctx, "shared", metav1.DeleteOptions{}))
	vcl2, err := vc.ResourceClaims(vns).Create(ctx, testobj.ClaimSpec().Devices("gpu", contract.DeviceClassGPU, 2).Claim("shared", vns), metav1.CreateOptions{})
	require.NoError(t, err)
	require.NoError(t, s.Sync(ctx)) // removes the stale copy
	require.NoError(t, s.Sync(ctx)) // copies the new claim
	hcl2, err := hc.ResourceClaims(ns).Get(ctx, hcl.Name, metav1.GetOptions{})
	require.NoError(t, err)
	require.Equal(t, string(vcl2.UID), hcl2.Annotations["vcluster.loft.sh/object-uid"])
	require.Equal(t, int64(2), hcl2.Spec.Devices.Requests[0].Exactly.Count)

	// Deleted in the team's cluster: gone on the host.
	require.NoError(t, vc.ResourceClaimTemplates(vns).Delete(ctx, "one-gpu", metav1.DeleteOptions{}))
	require.NoError(t, vc.ResourceClaims(vns).Delete(ctx, "shared", metav1.DeleteOptions{}))
	require.NoError(t, s.Sync(ctx))
	templates, err := hc.ResourceClaimTemplates(ns).List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	require.Empty(t, templates.Items)
	claims, err := hc.ResourceClaims(ns).List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	require.Len(t, claims.Items, 1, "only the pod's own claim is left")
	require.Equal(t, "made-from-template", claims.Items[0].Name)
}

// TestTheFenceJudgesEveryCopy: the host judges gpuvc's copies as anything a
// team namespace receives — the CEL fence matches every identity there, the
// manager's (here an administrator's) included — and each refusal reaches
// the team as a Warning event on its object, naming the field, the value and
// the limit, told once however often the copy is tried again.
func TestTheFenceJudgesEveryCopy(t *testing.T) {
	ctx := localcp.Context(t, 2*time.Minute)
	vns := virtualNamespace(ctx, t, "attacks")
	s := newTeam(fencedNS, fencedTeam, contract.DeviceClassGPU)
	vc := env.virtual.Client.ResourceV1()

	every := testobj.ClaimSpec().AllDevices("every", contract.DeviceClassGPU).Claim("every", vns)
	admin := testobj.ClaimSpec().Devices("gpu", contract.DeviceClassGPU, 1).AdminAccess().Template("admin", vns)
	slice := testobj.ClaimSpec().Devices("slice", contract.DeviceClassMIG, 1).Claim("slice", vns)
	other := testobj.ClaimSpec().Devices("x", otherClass, 1).Template("other", vns)
	many := testobj.ClaimSpec().Devices("gpu", contract.DeviceClassGPU, 3).Claim("many", vns)
	ok := testobj.ClaimSpec().Devices("gpu", contract.DeviceClassGPU, 1).Claim("ok", vns)
	for _, c := range []*resourcev1.ResourceClaim{every, slice, many, ok} {
		_, err := vc.ResourceClaims(vns).Create(ctx, c, metav1.CreateOptions{})
		require.NoError(t, err, "the team's own API server stores %s", c.Name)
	}
	for _, c := range []*resourcev1.ResourceClaimTemplate{admin, other} {
		_, err := vc.ResourceClaimTemplates(vns).Create(ctx, c, metav1.CreateOptions{})
		require.NoError(t, err, "the team's own API server stores %s", c.Name)
	}

	require.NoError(t, s.Sync(ctx), "refusals are told, not errors")
	require.NoError(t, s.Sync(ctx), "a second pass tells nothing new")

	for _, c := range []struct{ kind, name, reason, says string }{
		{"ResourceClaim", "every", "DeviceAllocationModeAll", "spec.devices.requests[0].exactly.allocationMode=All"},
		{"ResourceClaimTemplate", "admin", "DeviceAdminAccess", "spec.spec.devices.requests[0].exactly.adminAccess=true"},
		{"ResourceClaim", "slice", "DeviceClassNotAllowed", "spec.devices.requests[0].exactly.deviceClassName=" + contract.DeviceClassMIG},
		{"ResourceClaimTemplate", "other", "DeviceClassNotAllowed", "spec.spec.devices.requests[0].exactly.deviceClassName=" + otherClass},
		{"ResourceClaim", "many", "DeviceCountAboveLimit", "allows at most 2"},
	} {
		events := warnings(ctx, t, vns, c.name)
		require.Len(t, events, 1, "one warning on %s %s: %v", c.kind, c.name, events)
		e := events[0]
		require.Equal(t, c.kind, e.InvolvedObject.Kind)
		require.Equal(t, c.reason, e.Reason, e.Message)
		require.Contains(t, e.Message, c.says)
		require.Contains(t, e.Message, "limit")
		require.True(t, strings.HasPrefix(e.Message, "gpuvc could not copy "+c.kind+" "+vns+"/"+c.name+" to the host"), e.Message)
	}
	require.Empty(t, warnings(ctx, t, vns, "ok"))
	claims, err := env.host.Client.ResourceV1().ResourceClaims(fencedNS).List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	require.Len(t, claims.Items, 1, "only the allowed claim reached the host")
	require.Equal(t, teamclaims.HostName("ok", vns, fencedTeam), claims.Items[0].Name)
	templates, err := env.host.Client.ResourceV1().ResourceClaimTemplates(fencedNS).List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	require.Empty(t, templates.Items)
}

func warnings(ctx context.Context, t *testing.T, namespace, name string) []corev1.Event {
	t.Helper()
	l, err := env.virtual.Client.CoreV1().Events(namespace).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + name + ",type=Warning"})
	require.NoError(t, err)
	return l.Items
}

// TestClaimStatusComesBack: once the host allocates the copy and reserves it
// for a host pod vCluster synced, the team's claim says so, the reservation
// naming the team's pod; deallocated on the host, the team's claim is too.
func TestClaimStatusComesBack(t *testing.T) {
	ctx := localcp.Context(t, 2*time.Minute)
	ns := hostNamespace(ctx, t, "status-host")
	vns := virtualNamespace(ctx, t, "status")
	s := newTeam(ns, "status", contract.DeviceClassGPU)
	_, err := env.virtual.Client.ResourceV1().ResourceClaims(vns).Create(ctx,
		testobj.ClaimSpec().Devices("gpu", contract.DeviceClassGPU, 1).Claim("train", vns), metav1.CreateOptions{})
	require.NoError(t, err)
	require.NoError(t, s.Sync(ctx))

	// The host pod as vCluster makes it, and the scheduler's writes.
	pod := testobj.Pod("train-x-status-x-status", ns).Obj()
	pod.Annotations = map[string]string{"vcluster.loft.sh/object-name": "train", "vcluster.loft.sh/object-namespace": vns, "vcluster.loft.sh/object-uid": "virtual-pod-uid"}
	pod, err = env.host.Client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
	require.NoError(t, err)
	hcs := env.host.Client.ResourceV1().ResourceClaims(ns)
	h, err := hcs.Get(ctx, teamclaims.HostName("train", vns, "status"), metav1.GetOptions{})
	require.NoError(t, err)
	h.Status.Allocation = &resourcev1.AllocationResult{Devices: resourcev1.DeviceAllocationResult{Results: []resourcev1.DeviceRequestAllocationResult{
		{Request: "gpu", Driver: contract.DRADriver, Pool: "system-0", Device: "gpu-4"},
	}}}
	h.Status.ReservedFor = []resourcev1.ResourceClaimConsumerReference{{Resource: "pods", Name: pod.Name, UID: pod.UID}}
	h, err = hcs.UpdateStatus(ctx, h, metav1.UpdateOptions{})
	require.NoError(t, err)

	require.NoError(t, s.Sync(ctx))
	v, err := env.virtual.Client.ResourceV1().ResourceClaims(vns).Get(ctx, "train", metav1.GetOptions{})
	require.NoError(t, err)
	require.NotNil(t, v.Status.Allocation)
	require.Equal(t, h.Status.Allocation.Devices, v.Status.Allocation.Devices)
	require.Equal(t, []resourcev1.ResourceClaimConsumerReference{{Resource: "pods", Name: "train", UID: types.UID("virtual-pod-uid")}}, v.Status.ReservedFor)

	h.Status = resourcev1.ResourceClaimStatus{}
	_, err = hcs.UpdateStatus(ctx, h, metav1.UpdateOptions{})
	require.NoError(t, err)
	require.NoError(t, s.Sync(ctx))
	v, err = env.virtual.Client.ResourceV1().ResourceClaims(vns).Get(ctx, "train", metav1.GetOptions{})
	require.NoError(t, err)
	require.Nil(t, v.Status.Allocation)
	require.Empty(t, v.Status.ReservedFor)
}

// TestShowsOnlyTheAllowedDeviceClasses: the team's cluster shows the host's
// DeviceClasses the team may use, as the host has them, and no other; a class
// no longer allowed disappears, one the team made itself stays.
func TestShowsOnlyTheAllowedDeviceClasses(t *testing.T) {
	ctx := localcp.Context(t, 2*time.Minute)
	vdc := env.virtual.Client.ResourceV1().DeviceClasses()
	_, err := vdc.Create(ctx, &resourcev1.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: "mine.example.com"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = vdc.DeleteCollection(context.Background(), metav1.DeleteOptions{}, metav1.ListOptions{}) })
	shown := func() []string {
		l, err := vdc.List(ctx, metav1.ListOptions{})
		require.NoError(t, err)
		var names []string
		for _, c := range l.Items {
			names = append(names, c.Name)
		}
		return names
	}

	s := newTeam(hostNamespace(ctx, t, "classes-host"), "classes", contract.DeviceClassGPU, "missing.example.com")
	require.NoError(t, s.Sync(ctx))
	require.ElementsMatch(t, []string{contract.DeviceClassGPU, "mine.example.com"}, shown())
	v, err := vdc.Get(ctx, contract.DeviceClassGPU, metav1.GetOptions{})
	require.NoError(t, err)
	h, err := env.host.Client.ResourceV1().DeviceClasses().Get(ctx, contract.DeviceClassGPU, metav1.GetOptions{})
	require.NoError(t, err)
	require.Equal(t, h.Spec, v.Spec)

	s.Classes = []string{contract.DeviceClassMIG}
	require.NoError(t, s.Sync(ctx))
	require.ElementsMatch(t, []string{contract.DeviceClassMIG, "mine.example.com"}, shown())
}
