package integration

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/gpuvc/gpuvc/api/contract"
	"github.com/gpuvc/gpuvc/e2e/localcp"
	"github.com/gpuvc/gpuvc/e2e/testsupport/identity"
	"github.com/gpuvc/gpuvc/e2e/testsupport/poll"
	"github.com/gpuvc/gpuvc/e2e/testsupport/testobj"
	"github.com/gpuvc/gpuvc/syncer"
)

// Team dra uses Dynamic Resource Allocation on the real API server, scheduler
// and resource claim controller, with no DRA driver: the tests publish
// ResourceSlices of a driver of their own for two kwok nodes, one per pool,
// as a driver's kubelet plugin would (the scheduler allocates from slices;
// nothing prepares the devices).
const (
	draTeam    = "dra"
	draTeam2   = "dra2"
	draNS      = "team-" + draTeam
	draDriver  = "test.gpuvc.dev"
	draClass   = "gpu." + draDriver
	draQuota   = "gpuvc-quota"
	draCeiling = 3
	draLayer   = "dra.validate.gpuvc.dev"
	// otherClass exists on the host but is not team dra's.
	otherClass = "gpu.other.example.com"
)

var draOnce struct {
	sync.Once
	tenant kubernetes.Interface
	err    error
}

// draTenant sets team dra up once and returns its vCluster syncer's identity,
// with the rights vCluster's chart grants it on claims, their status and
// claim templates: the DeviceClasses, a slice of two devices on a100-0 (pool
// a100, the team's) and on h100-0 (pool h100), the team's ResourceQuota as
// the manager writes it (whole GPUs and the class each at the ceiling), and
// the namespace label that lets the API server accept adminAccess (a
// platform's slip gpuvc must not rely on).
func draTenant(t *testing.T) kubernetes.Interface {
	t.Helper()
	draOnce.Do(func() { draOnce.tenant, draOnce.err = setUpDRA(context.Background()) })
	if draOnce.err != nil {
		t.Fatalf("setting up team dra: %v", draOnce.err)
	}
	return draOnce.tenant
}

func setUpDRA(ctx context.Context) (kubernetes.Interface, error) {
	c := env.cp.Client
	for _, ns := range []string{draNS, "team-" + draTeam2} {
		if err := env.cp.WaitForServiceAccount(ctx, ns, "default"); err != nil {
			return nil, err
		}
	}
	for _, class := range []string{draClass, otherClass} {
		if _, err := c.ResourceV1().DeviceClasses().Create(ctx, &resourcev1.DeviceClass{
			ObjectMeta: metav1.ObjectMeta{Name: class},
			Spec: resourcev1.DeviceClassSpec{Selectors: []resourcev1.DeviceSelector{{CEL: &resourcev1.CELDeviceSelector{
				Expression: fmt.Sprintf("device.driver == %q", draDriver)}}}},
		}, metav1.CreateOptions{}); err != nil {
			return nil, err
		}
	}
	for _, node := range []string{"a100-0", "h100-0"} {
		if _, err := c.ResourceV1().ResourceSlices().Create(ctx, slice(node), metav1.CreateOptions{}); err != nil {
			return nil, err
		}
	}
	if _, err := c.CoreV1().ResourceQuotas(draNS).Create(ctx, &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: draQuota},
		Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{
			"requests." + contract.ResourceGPU:                              *resource.NewQuantity(draCeiling, resource.DecimalSI),
			corev1.ResourceName(draClass + contract.DeviceClassQuotaSuffix): *resource.NewQuantity(draCeiling, resource.DecimalSI),
		}},
	}, metav1.CreateOptions{}); err != nil {
		return nil, err
	}
	ns, err := c.CoreV1().Namespaces().Get(ctx, draNS, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	ns.Labels["resource.kubernetes.io/admin-access"] = "true"
	if _, err := c.CoreV1().Namespaces().Update(ctx, ns, metav1.UpdateOptions{}); err != nil {
		return nil, err
	}
	for _, team := range []string{draTeam, draTeam2, "fraud"} {
		if err := identity.GrantVClusterDRA(ctx, c, "team-"+team, "vc-"+team); err != nil {
			return nil, err
		}
	}
	return impersonate(env.cp.Config, vclusterUser(draTeam))
}

// slice publishes two devices on node, in a pool named after it.
func slice(node string) *resourcev1.ResourceSlice {
	s := &resourcev1.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{Name: draDriver + "-" + node},
		Spec: resourcev1.ResourceSliceSpec{
			Driver: draDriver, NodeName: ptr.To(node),
			Pool: resourcev1.ResourcePool{Name: node, Generation: 1, ResourceSliceCount: 1},
		},
	}
	for i := range 2 {
		s.Spec.Devices = append(s.Spec.Devices, resourcev1.Device{Name: fmt.Sprintf("gpu-%d", i),
			Attributes: map[resourcev1.QualifiedName]resourcev1.DeviceAttribute{"node": {StringValue: ptr.To(node)}}})
	}
	return s
}

// TestDRAClaimTemplatePodGetsItsPoolsDevice: a spec.dra team's pod with a
// claim template is pinned to its pool by the webhook, the resource claim
// controller makes its claim, the scheduler allocates a device of the node
// the pod lands on — a100-0, though h100-0 of another pool has free devices
// of the same class — and the team's ResourceQuota counts the claim.
func TestDRAClaimTemplatePodGetsItsPoolsDevice(t *testing.T) {
	localcp.ForTest(t)
	ctx := poll.TestContext(t)
	tenant := draTenant(t)
	tmpl := testobj.ClaimSpec().Devices("gpu", draClass, 1).Template("one-gpu", draNS)
	if _, err := tenant.ResourceV1().ResourceClaimTemplates(draNS).Create(ctx, tmpl, metav1.CreateOptions{}); err != nil {
		t.Fatalf("the team's claim template refused: %v", err)
	}
	t.Cleanup(func() {
		_ = env.cp.Client.ResourceV1().ResourceClaimTemplates(draNS).Delete(context.Background(), "one-gpu", metav1.DeleteOptions{})
	})
	pod, err := create(ctx, t, draTeam, testobj.Pod("dra-pod", "default").ResourceClaim("gpu", "one-gpu").Obj())
	if err != nil {
		t.Fatalf("the team's DRA pod refused: %v", err)
	}
	if pod.Spec.NodeSelector[contract.LabelPool] != "a100" {
		t.Fatalf("the pod selects %v, want pool a100", pod.Spec.NodeSelector)
	}
	var claim *resourcev1.ResourceClaim
	poll.UntilSeen(ctx, t, time.Minute, "the pod's claim allocated", func(ctx context.Context) (bool, string, error) {
		p, err := env.cp.Client.CoreV1().Pods(draNS).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil || len(p.Status.ResourceClaimStatuses) == 0 || p.Status.ResourceClaimStatuses[0].ResourceClaimName == nil {
			return false, fmt.Sprintf("pod %v, claim statuses %+v", err, p.Status.ResourceClaimStatuses), nil
		}
		claim, err = env.cp.Client.ResourceV1().ResourceClaims(draNS).Get(ctx, *p.Status.ResourceClaimStatuses[0].ResourceClaimName, metav1.GetOptions{})
		if err != nil || claim.Status.Allocation == nil || p.Spec.NodeName == "" {
			return false, fmt.Sprintf("claim %v, node %q", err, p.Spec.NodeName), nil
		}
		if p.Spec.NodeName != "a100-0" {
			t.Errorf("the pod landed on %s, want a100-0 (the only node of pool a100 with devices)", p.Spec.NodeName)
		}
		return true, "", nil
	})
	for _, r := range claim.Status.Allocation.Devices.Results {
		if r.Driver != draDriver || r.Pool != "a100-0" {
			t.Errorf("allocated %s/%s/%s, want a device of a100-0's pool", r.Driver, r.Pool, r.Device)
		}
	}
	used := corev1.ResourceName(draClass + contract.DeviceClassQuotaSuffix)
	poll.UntilSeen(ctx, t, time.Minute, "the quota counting the claim", func(ctx context.Context) (bool, string, error) {
		q, err := env.cp.Client.CoreV1().ResourceQuotas(draNS).Get(ctx, draQuota, metav1.GetOptions{})
		if err != nil {
			return false, err.Error(), nil
		}
		n := q.Status.Used[used]
		return n.Value() == 1, fmt.Sprintf("%s used %s", used, n.String()), nil
	})
}

// draAttack is a DRA object a tenant identity writes and the words the
// webhook's refusal must contain.
type draAttack struct {
	claim    *resourcev1.ResourceClaim
	template *resourcev1.ResourceClaimTemplate
	team     string // default dra
	refused  []string
}

func draAttacks() map[string]draAttack {
	spec := testobj.ClaimSpec
	return map[string]draAttack{
		"another DeviceClass": {claim: spec().Devices("gpu", otherClass, 1).Claim("other-class", draNS),
			refused: refused(syncer.ReasonDeviceClassNotAllowed, "spec.devices.requests[0].exactly.deviceClassName="+otherClass, "limit: spec.dra.deviceClasses ["+draClass+"]")},
		"every device of a node": {claim: spec().AllDevices("gpu", draClass).Claim("all", draNS),
			refused: refused(syncer.ReasonDeviceAllocationAll, "spec.devices.requests[0].exactly.allocationMode=All", "limit: allocationMode ExactCount")},
		"admin access": {claim: spec().Devices("gpu", draClass, 1).AdminAccess().Claim("admin", draNS),
			refused: refused(syncer.ReasonDeviceAdminAccess, "spec.devices.requests[0].exactly.adminAccess=true", "limit: no adminAccess in team namespaces")},
		"firstAvailable smuggling another class": {claim: spec().FirstAvailable("gpu", testobj.Sub("own", draClass, 1), testobj.Sub("foreign", otherClass, 1)).Claim("smuggle", draNS),
			refused: refused(syncer.ReasonDeviceClassNotAllowed, "spec.devices.requests[0].firstAvailable[1].deviceClassName="+otherClass)},
		"firstAvailable smuggling All": {claim: spec().FirstAvailable("gpu", testobj.Sub("own", draClass, 1), testobj.AllSub("all", draClass)).Claim("smuggle-all", draNS),
			refused: refused(syncer.ReasonDeviceAllocationAll, "spec.devices.requests[0].firstAvailable[1].allocationMode=All")},
		"more devices than a pod may hold": {claim: spec().Devices("gpu", draClass, 3).Claim("three", draNS),
			refused: refused(syncer.ReasonDeviceCountAboveLimit, "asks for up to 3 devices", "limit: maxGPUsPerPod=2")},
		"device toleration": {claim: spec().Devices("gpu", draClass, 1).TolerateAll().Claim("tolerant", draNS),
			refused: refused(syncer.ReasonDeviceToleration, "spec.devices.requests[0].exactly.tolerations", "limit: no device tolerations")},
		"template of another class": {template: spec().Devices("gpu", otherClass, 1).Template("other-class", draNS),
			refused: refused(syncer.ReasonDeviceClassNotAllowed, "ResourceClaimTemplate other-class: spec.spec.devices.requests[0].exactly.deviceClassName="+otherClass)},
		"claim of a team without spec.dra": {team: "fraud", claim: spec().Devices("gpu", draClass, 1).Claim("no-dra", "team-fraud"),
			refused: refused(syncer.ReasonResourceClaim, "team fraud does not use it", "limit: the Team's spec.dra is unset")},
	}
}

// TestDRAAttacks: each attack is refused by the DRA webhook, naming the field.
func TestDRAAttacks(t *testing.T) {
	localcp.ForTest(t)
	draTenant(t)
	for name, a := range draAttacks() {
		t.Run(name, func(t *testing.T) {
			ctx := poll.TestContext(t)
			team := a.team
			if team == "" {
				team = draTeam
			}
			writer, err := impersonate(env.cp.Config, vclusterUser(team))
			if err != nil {
				t.Fatal(err)
			}
			ns := "team-" + team
			dryRun := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
			if a.claim != nil {
				_, err = writer.ResourceV1().ResourceClaims(ns).Create(ctx, a.claim, dryRun)
			} else {
				_, err = writer.ResourceV1().ResourceClaimTemplates(ns).Create(ctx, a.template, dryRun)
			}
			refusedBy(t, err, draLayer, a.refused...)
		})
	}
}

// TestDRAClaimStatusIsTheSchedulers: the team's vCluster syncer, which
// vCluster's Role lets update resourceclaims/status, may not write an
// allocation (picking a device, another pool's or in use) nor a reservation:
// Kubernetes refuses it without update on resourceclaims/binding, the webhook
// even with it; a cluster admin may (the check judges identities of the
// namespace only).
func TestDRAClaimStatusIsTheSchedulers(t *testing.T) {
	localcp.ForTest(t)
	ctx := poll.TestContext(t)
	tenant := draTenant(t)
	claim, err := tenant.ResourceV1().ResourceClaims(draNS).Create(ctx, testobj.ClaimSpec().Devices("gpu", draClass, 1).Claim("status-target", draNS), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("the team's claim refused: %v", err)
	}
	t.Cleanup(func() {
		_ = env.cp.Client.ResourceV1().ResourceClaims(draNS).Delete(context.Background(), claim.Name, metav1.DeleteOptions{})
	})
	claim.Status.Allocation = &resourcev1.AllocationResult{Devices: resourcev1.DeviceAllocationResult{Results: []resourcev1.DeviceRequestAllocationResult{{
		Request: "gpu", Driver: draDriver, Pool: "h100-0", Device: "gpu-0"}}},
		NodeSelector: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchFields: []corev1.NodeSelectorRequirement{{
			Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{"h100-0"}}}}}}}
	dryRun := metav1.UpdateOptions{DryRun: []string{metav1.DryRunAll}}
	// Kubernetes 1.36's own fence first: vCluster's Role grants
	// resourceclaims/status, not resourceclaims/binding.
	_, err = tenant.ResourceV1().ResourceClaims(draNS).UpdateStatus(ctx, claim, dryRun)
	if err == nil || !strings.Contains(err.Error(), `requires resource="resourceclaims/binding", verb="update" permission`) {
		t.Fatalf("an allocation without resourceclaims/binding: %v; want Kubernetes' refusal", err)
	}
	// gpuvc's holds where a platform grants that too.
	if err := grantClaimBinding(ctx, vclusterUser(draTeam)); err != nil {
		t.Fatal(err)
	}
	poll.Until(ctx, t, time.Minute, "the binding permission in effect", func(ctx context.Context) (bool, error) {
		_, err = tenant.ResourceV1().ResourceClaims(draNS).UpdateStatus(ctx, claim, dryRun)
		return err != nil && !strings.Contains(err.Error(), "resourceclaims/binding"), nil
	})
	refusedBy(t, err, draLayer, refused(syncer.ReasonClaimStatusProtected, "status.allocation of ResourceClaim status-target", "system:serviceaccount:team-dra:vc-dra",
		"limit: allocations and reservations are written by the scheduler and the resource claim controller only")...)
	if _, err := env.cp.Client.ResourceV1().ResourceClaims(draNS).UpdateStatus(ctx, claim, dryRun); err != nil {
		t.Errorf("a cluster admin's allocation refused (the refusal above may be the API server's, not the fence's): %v", err)
	}
}

// TestDRAPodClaims: a pod names claims of its own namespace only — the field
// has no namespace, so a claim of the same name elsewhere is not found; a
// pod's device-plugin GPUs and claimed devices count together per pod; and
// gpuvc's ceiling holds nvidia.com/gpu and DRA devices together where the
// ResourceQuota holds each alone.
func TestDRAPodClaims(t *testing.T) {
	localcp.ForTest(t)
	ctx := poll.TestContext(t)
	tenant := draTenant(t)
	if _, err := env.cp.Client.ResourceV1().ResourceClaims("plain").Create(ctx, testobj.ClaimSpec().Devices("gpu", draClass, 1).Claim("elsewhere", "plain"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err := create(ctx, t, draTeam, testobj.Pod("foreign-claim", "default").NamedResourceClaim("gpu", "elsewhere").Obj())
	refusedBy(t, err, mutatingWebhook, refused(syncer.ReasonClaimNotFound, "names ResourceClaim elsewhere, which is not in namespace team-dra", "limit: a pod's claims come from its own namespace")...)

	two := testobj.ClaimSpec().Devices("gpu", draClass, 2).Template("two-gpus", draNS)
	if _, err := tenant.ResourceV1().ResourceClaimTemplates(draNS).Create(ctx, two, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = env.cp.Client.ResourceV1().ResourceClaimTemplates(draNS).Delete(context.Background(), "two-gpus", metav1.DeleteOptions{})
	})
	_, err = create(ctx, t, draTeam, testobj.Pod("gpu-and-claim", "default").GPUs("1").ResourceClaim("gpu", "two-gpus").Obj())
	refusedBy(t, err, mutatingWebhook, refused(syncer.ReasonGPUCountAboveLimit, "holds 1 GPU device(s) through resources.limits and up to 2 through its claims", "limit: maxGPUsPerPod=2")...)

	// Two whole GPUs held by a pod, then a claim of two devices: within the
	// class's quota (3) alone, beyond the team's ceiling (3) together.
	if _, err := create(ctx, t, draTeam, testobj.Pod("two-gpus", "default").GPUs("2").Obj()); err != nil {
		t.Fatal(err)
	}
	_, err = tenant.ResourceV1().ResourceClaims(draNS).Create(ctx, testobj.ClaimSpec().Devices("gpu", draClass, 2).Claim("beyond", draNS),
		metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	refusedBy(t, err, draLayer, refused(syncer.ReasonGPUCeiling, "whole GPUs and DRA devices together", "limit: 3, spec.quota.gpus")...)
}

// grantClaimBinding lets user update resourceclaims/binding cluster-wide,
// which Kubernetes 1.36 asks of whoever changes a claim's allocation or
// reservations (the scheduler and the resource claim controller hold it).
func grantClaimBinding(ctx context.Context, user string) error {
	name := "claim-binding-" + strings.NewReplacer(":", "-").Replace(user)
	if _, err := env.cp.Client.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: []rbacv1.PolicyRule{{
		APIGroups: []string{"resource.k8s.io"}, Resources: []string{"resourceclaims/binding"}, Verbs: []string{"update"},
	}}}, metav1.CreateOptions{}); err != nil {
		return err
	}
	_, err := env.cp.Client.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}},
	}, metav1.CreateOptions{})
	return err
}

// TestDRATwoTeamsNeverShareADevice: two spec.dra teams of pool a100 each get
// one of a100-0's two devices, never the same one; a third pod then finds
// none left in its pool (h100-0's are another pool's) and stays unscheduled,
// its claim unallocated.
func TestDRATwoTeamsNeverShareADevice(t *testing.T) {
	localcp.ForTest(t)
	ctx := poll.TestContext(t)
	draTenant(t)
	allocated := map[string]string{} // team → pool/device
	for _, team := range []string{draTeam, draTeam2} {
		ns := "team-" + team
		writer, err := impersonate(env.cp.Config, vclusterUser(team))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := writer.ResourceV1().ResourceClaimTemplates(ns).Create(ctx, testobj.ClaimSpec().Devices("gpu", draClass, 1).Template("share-test", ns), metav1.CreateOptions{}); err != nil {
			t.Fatalf("team %s's claim template refused: %v", team, err)
		}
		t.Cleanup(func() {
			_ = env.cp.Client.ResourceV1().ResourceClaimTemplates(ns).Delete(context.Background(), "share-test", metav1.DeleteOptions{})
		})
		pod, err := create(ctx, t, team, testobj.Pod("share-"+team, "default").ResourceClaim("gpu", "share-test").Obj())
		if err != nil {
			t.Fatalf("team %s's DRA pod refused: %v", team, err)
		}
		claim := allocatedClaim(ctx, t, ns, pod.Name)
		r := claim.Status.Allocation.Devices.Results[0]
		allocated[team] = r.Pool + "/" + r.Device
	}
	if allocated[draTeam] == allocated[draTeam2] || !strings.HasPrefix(allocated[draTeam], "a100-0/") || !strings.HasPrefix(allocated[draTeam2], "a100-0/") {
		t.Fatalf("devices %v: want two different devices of a100-0", allocated)
	}
	pod, err := create(ctx, t, draTeam2, testobj.Pod("share-third", "default").ResourceClaim("gpu", "share-test").Obj())
	if err != nil {
		t.Fatal(err)
	}
	poll.UntilSeen(ctx, t, time.Minute, "the third pod unschedulable", func(ctx context.Context) (bool, string, error) {
		p, err := env.cp.Client.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error(), nil
		}
		if p.Spec.NodeName != "" {
			t.Fatalf("the third pod was bound to %s with a device of another team or pool", p.Spec.NodeName)
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
				return true, "", nil
			}
		}
		return false, fmt.Sprintf("conditions %+v", p.Status.Conditions), nil
	})
}

// allocatedClaim waits until the pod's first claim is allocated and returns it.
func allocatedClaim(ctx context.Context, t *testing.T, ns, pod string) *resourcev1.ResourceClaim {
	t.Helper()
	var claim *resourcev1.ResourceClaim
	poll.UntilSeen(ctx, t, time.Minute, "pod "+ns+"/"+pod+"'s claim allocated", func(ctx context.Context) (bool, string, error) {
		p, err := env.cp.Client.CoreV1().Pods(ns).Get(ctx, pod, metav1.GetOptions{})
		if err != nil || len(p.Status.ResourceClaimStatuses) == 0 || p.Status.ResourceClaimStatuses[0].ResourceClaimName == nil {
			return false, fmt.Sprintf("pod %v, claim statuses %+v", err, p.Status.ResourceClaimStatuses), nil
		}
		claim, err = env.cp.Client.ResourceV1().ResourceClaims(ns).Get(ctx, *p.Status.ResourceClaimStatuses[0].ResourceClaimName, metav1.GetOptions{})
		if err != nil || claim.Status.Allocation == nil {
			return false, fmt.Sprintf("claim %v", err), nil
		}
		return true, "", nil
	})
	return claim
}
