package celpolicy_test

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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/gpuvc/gpuvc/e2e/localcp"
	"github.com/gpuvc/gpuvc/e2e/testsupport/identity"
	"github.com/gpuvc/gpuvc/e2e/testsupport/poll"
	"github.com/gpuvc/gpuvc/e2e/testsupport/testobj"
	"github.com/gpuvc/gpuvc/syncer"
	c "github.com/gpuvc/gpuvc/syncer/celpolicy"
)

// Team draft uses Dynamic Resource Allocation (spec.dra): the DRA fences judge
// its claims and claim templates with no webhook at all. Its namespace carries
// the label that lets the API server accept adminAccess (a platform's slip
// the fence must not rely on). DeviceClasses need not exist: the API server
// does not look them up on create.
const (
	draftTeam  = "draft"
	draftNS    = "team-" + draftTeam
	draftClass = "gpu.nvidia.com"
	otherClass = "gpu.other.example.com"
)

var draftPolicy = syncer.TeamPolicy{
	Team: draftTeam, Namespace: draftNS, Pool: pool, SystemPool: systemPool,
	MaxGPUsPerPod: maxGPUs, VClusterName: draftTeam, DRA: true, AllowedDeviceClasses: []string{draftClass},
}

var draftOnce struct {
	sync.Once
	tenant kubernetes.Interface
	err    error
}

// draftTenant sets team draft up once and returns its vCluster syncer's
// identity, with the rights vCluster's chart grants it on claims, their
// status and claim templates.
func draftTenant(t *testing.T) kubernetes.Interface {
	t.Helper()
	draftOnce.Do(func() { draftOnce.tenant, draftOnce.err = setUpDraft(context.Background()) })
	if draftOnce.err != nil {
		t.Fatalf("setting up team draft: %v", draftOnce.err)
	}
	return draftOnce.tenant
}

func setUpDraft(ctx context.Context) (kubernetes.Interface, error) {
	if err := createTeamNamespace(ctx, draftNS, draftTeam, c.PolicyParams(&draftPolicy)); err != nil {
		return nil, err
	}
	if err := labelNamespace(ctx, draftNS, map[string]string{"resource.kubernetes.io/admin-access": "true"}); err != nil {
		return nil, err
	}
	cl := env.cp.Client
	for _, ns := range []string{draftNS, teamNS} {
		team := strings.TrimPrefix(ns, "team-")
		if err := identity.GrantVClusterDRA(ctx, cl, ns, "vc-"+team); err != nil {
			return nil, err
		}
	}
	tenant, err := impersonate(vclusterUser(draftTeam))
	if err != nil {
		return nil, err
	}
	// The API server loads the DRA policies and their bindings asynchronously.
	probe := testobj.ClaimSpec().AllDevices("gpu", draftClass).Claim("probe", draftNS)
	var last error
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, last = tenant.ResourceV1().ResourceClaims(draftNS).Create(ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return last != nil && strings.Contains(last.Error(), c.ClaimFenceName), nil
	}); err != nil {
		return nil, fmt.Errorf("the DRA fence never took effect: %w (last: %v)", err, last)
	}
	return tenant, nil
}

// draRefusal is what a DRA fence's refusal must contain.
func draRefusal(fence, reason string, words ...string) []string {
	return append([]string{fmt.Sprintf("ValidatingAdmissionPolicy '%s' with binding '%s' denied request: gpuvc: %s: ", fence, fence, reason)}, words...)
}

func draAttacks() map[string]struct {
	claim    *resourcev1.ResourceClaim
	template *resourcev1.ResourceClaimTemplate
	want     []string
} {
	type a = struct {
		claim    *resourcev1.ResourceClaim
		template *resourcev1.ResourceClaimTemplate
		want     []string
	}
	spec := testobj.ClaimSpec
	claims := func(reason string, words ...string) []string { return draRefusal(c.ClaimFenceName, reason, words...) }
	return map[string]a{
		"another DeviceClass": {claim: spec().Devices("gpu", otherClass, 1).Claim("other-class", draftNS),
			want: claims(c.ReasonDeviceClassNotAllowed, "ResourceClaim team-draft/other-class: spec.devices.requests[0].exactly.deviceClassName="+otherClass, "limit: spec.dra.deviceClasses "+draftClass)},
		"every device of a node": {claim: spec().AllDevices("gpu", draftClass).Claim("all", draftNS),
			want: claims(c.ReasonDeviceAllocationAll, "spec.devices.requests[0].exactly.allocationMode=All", "limit: allocationMode ExactCount")},
		"admin access": {claim: spec().Devices("gpu", draftClass, 1).AdminAccess().Claim("admin", draftNS),
			want: claims(c.ReasonDeviceAdminAccess, "spec.devices.requests[0].exactly.adminAccess=true", "limit: no adminAccess in team namespaces")},
		"firstAvailable smuggling another class": {claim: spec().FirstAvailable("gpu", testobj.Sub("own", draftClass, 1), testobj.Sub("foreign", otherClass, 1)).Claim("smuggle", draftNS),
			want: claims(c.ReasonDeviceClassNotAllowed, "spec.devices.requests[0].firstAvailable[1].deviceClassName="+otherClass)},
		"firstAvailable smuggling All": {claim: spec().FirstAvailable("gpu", testobj.Sub("own", draftClass, 1), testobj.AllSub("all", draftClass)).Claim("smuggle-all", draftNS),
			want: claims(c.ReasonDeviceAllocationAll, "spec.devices.requests[0].firstAvailable[1].allocationMode=All")},
		"more devices than a pod may hold": {claim: spec().Devices("a", draftClass, 2).Devices("b", draftClass, 1).Claim("three", draftNS),
			want: claims(c.ReasonDeviceCountAboveLimit, "asks for up to 3 devices", "limit: maxGPUsPerPod=2")},
		"firstAvailable counted at its largest": {claim: spec().FirstAvailable("gpu", testobj.Sub("one", draftClass, 1), testobj.Sub("three", draftClass, 3)).Claim("largest", draftNS),
			want: claims(c.ReasonDeviceCountAboveLimit, "asks for up to 3 devices")},
		"device toleration": {claim: spec().Devices("gpu", draftClass, 1).TolerateAll().Claim("tolerant", draftNS),
			want: claims(c.ReasonDeviceToleration, "spec.devices.requests[0].exactly.tolerations", "limit: no device tolerations")},
		"template of another class": {template: spec().Devices("gpu", otherClass, 1).Template("other-class", draftNS),
			want: draRefusal(c.TemplateFenceName, c.ReasonDeviceClassNotAllowed, "ResourceClaimTemplate team-draft/other-class: spec.spec.devices.requests[0].exactly.deviceClassName="+otherClass)},
		"template of every device": {template: spec().AllDevices("gpu", draftClass).Template("all", draftNS),
			want: draRefusal(c.TemplateFenceName, c.ReasonDeviceAllocationAll, "spec.spec.devices.requests[0].exactly.allocationMode=All")},
	}
}

// TestDRAFenceAttacks: each attack is refused by the CEL layer alone, naming
// the field; what the team may ask for is admitted, narrowing CEL selector
// included.
func TestDRAFenceAttacks(t *testing.T) {
	localcp.ForTest(t)
	tenant := draftTenant(t)
	dryRun := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
	for name, a := range draAttacks() {
		t.Run(name, func(t *testing.T) {
			ctx := poll.TestContext(t)
			var err error
			if a.claim != nil {
				_, err = tenant.ResourceV1().ResourceClaims(draftNS).Create(ctx, a.claim, dryRun)
			} else {
				_, err = tenant.ResourceV1().ResourceClaimTemplates(draftNS).Create(ctx, a.template, dryRun)
			}
			refusedWith(t, err, a.want...)
		})
	}
	ctx := poll.TestContext(t)
	ok := testobj.ClaimSpec().Devices("gpu", draftClass, 2).Selector(`device.attributes["gpu.nvidia.com"].productName == "A100"`).
		FirstAvailable("mig", testobj.Sub("big", draftClass, 1), testobj.Sub("small", draftClass, 1))
	if _, err := tenant.ResourceV1().ResourceClaims(draftNS).Create(ctx, ok.Claim("ok", draftNS), dryRun); err == nil {
		t.Errorf("a claim of 3 devices admitted beyond maxGPUsPerPod=2")
	}
	ok = testobj.ClaimSpec().Devices("gpu", draftClass, 1).Selector(`device.attributes["gpu.nvidia.com"].productName == "A100"`).
		FirstAvailable("mig", testobj.Sub("big", draftClass, 1), testobj.Sub("small", draftClass, 1))
	if _, err := tenant.ResourceV1().ResourceClaims(draftNS).Create(ctx, ok.Claim("ok", draftNS), dryRun); err != nil {
		t.Errorf("a claim the team may make refused: %v", err)
	}
	if _, err := tenant.ResourceV1().ResourceClaimTemplates(draftNS).Create(ctx, ok.Template("ok", draftNS), dryRun); err != nil {
		t.Errorf("a template the team may make refused: %v", err)
	}
	pod := testobj.Pod("dra-ok", draftNS).InPool(pool).ResourceClaim("gpu", "ok").Obj()
	if _, err := tenant.CoreV1().Pods(draftNS).Create(ctx, pod, dryRun); err != nil {
		t.Errorf("a pod of team draft naming a claim template refused: %v", err)
	}
}

// TestDRAFenceTeamWithoutDRA: team fraud has no spec.dra: its claims are
// refused (and its pods naming claims, TestGaps "DRA resource claim").
func TestDRAFenceTeamWithoutDRA(t *testing.T) {
	localcp.ForTest(t)
	draftTenant(t) // RBAC on claims for fraud's syncer too
	ctx := poll.TestContext(t)
	_, err := env.tenant.ResourceV1().ResourceClaims(teamNS).Create(ctx, testobj.ClaimSpec().Devices("gpu", draftClass, 1).Claim("no-dra", teamNS),
		metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	refusedWith(t, err, draRefusal(c.ClaimFenceName, c.ReasonResourceClaim, "ResourceClaim team-fraud/no-dra", "team fraud does not use it", "limit: the Team's spec.dra is unset")...)
}

// TestDRAFenceClaimStatus: the team's vCluster syncer (vCluster's Role lets
// it update resourceclaims/status) may not write an allocation or a
// reservation: Kubernetes refuses it without update on resourceclaims/binding,
// and the fence refuses it even with that; a cluster admin may.
func TestDRAFenceClaimStatus(t *testing.T) {
	localcp.ForTest(t)
	tenant := draftTenant(t)
	ctx := poll.TestContext(t)
	claim, err := tenant.ResourceV1().ResourceClaims(draftNS).Create(ctx, testobj.ClaimSpec().Devices("gpu", draftClass, 1).Claim("status-target", draftNS), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("the team's claim refused: %v", err)
	}
	t.Cleanup(func() {
		_ = env.cp.Client.ResourceV1().ResourceClaims(draftNS).Delete(context.Background(), claim.Name, metav1.DeleteOptions{})
	})
	claim.Status.Allocation = &resourcev1.AllocationResult{Devices: resourcev1.DeviceAllocationResult{Results: []resourcev1.DeviceRequestAllocationResult{{
		Request: "gpu", Driver: "gpu.nvidia.com", Pool: "h100-0", Device: "gpu-0"}}},
		NodeSelector: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchFields: []corev1.NodeSelectorRequirement{{
			Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{"h100-0"}}}}}}}
	dryRun := metav1.UpdateOptions{DryRun: []string{metav1.DryRunAll}}
	// Kubernetes 1.36's own fence first: vCluster's Role grants
	// resourceclaims/status, not resourceclaims/binding.
	_, err = tenant.ResourceV1().ResourceClaims(draftNS).UpdateStatus(ctx, claim, dryRun)
	refusedWith(t, err, `requires resource="resourceclaims/binding", verb="update" permission`)
	// gpuvc's holds where a platform grants that too.
	if err := grantClaimBinding(ctx, vclusterUser(draftTeam)); err != nil {
		t.Fatal(err)
	}
	poll.Until(ctx, t, time.Minute, "the binding permission in effect", func(ctx context.Context) (bool, error) {
		_, err = tenant.ResourceV1().ResourceClaims(draftNS).UpdateStatus(ctx, claim, dryRun)
		return err != nil && !strings.Contains(err.Error(), "resourceclaims/binding"), nil
	})
	refusedWith(t, err, draRefusal(c.ClaimFenceName, c.ReasonClaimStatusProtected, "status.allocation of ResourceClaim team-draft/status-target",
		"system:serviceaccount:team-draft:vc-draft", "limit: allocations and reservations are written by the scheduler")...)
	if _, err := env.cp.Client.ResourceV1().ResourceClaims(draftNS).UpdateStatus(ctx, claim, dryRun); err != nil {
		t.Errorf("a cluster admin's allocation refused (the refusal above may be the API server's, not the fence's): %v", err)
	}
}

// refusedWith fails unless err is a refusal containing every word.
func refusedWith(t *testing.T, err error, words ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("admitted; want a refusal saying %q", words)
	}
	for _, w := range words {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("refusal %q does not mention %q", err.Error(), w)
		}
	}
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
