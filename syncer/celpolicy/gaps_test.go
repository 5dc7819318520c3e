package celpolicy_test

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"

	nodev1 "k8s.io/api/node/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"

	"github.com/gpuvc/gpuvc/api/contract"
	"github.com/gpuvc/gpuvc/e2e/localcp"
	"github.com/gpuvc/gpuvc/e2e/testsupport/poll"
	"github.com/gpuvc/gpuvc/e2e/testsupport/testobj"
	"github.com/gpuvc/gpuvc/syncer"
	c "github.com/gpuvc/gpuvc/syncer/celpolicy"
)

// What the webhook decides from the team policy and the fence now decides
// too, because the parameters carry that policy (PolicyParams): scheduler,
// priority and runtime classes, KAI queue, the MIG allow-list, fractions per
// team, share semantics, DRA claims, and gpuvc.dev/ metadata only gpuvc writes.

const (
	allowedClass   = "gpuvc-test-allowed" // a PriorityClass and a RuntimeClass team fraud may use
	foreignRuntime = "gpuvc-test-foreign" // a RuntimeClass it may not
	fraudQueue     = "fraud-queue"
)

// fraudPolicy is team fraud's policy; its parameters are what the manager
// writes from it.
var fraudPolicy = syncer.TeamPolicy{
	Team: team, Namespace: teamNS, Pool: pool, SystemPool: systemPool, PoolGPUMemoryMiB: 81920,
	MaxGPUsPerPod: maxGPUs, AllowedMIGProfiles: []string{"2g.20gb", "1g.10gb"}, FractionsEnabled: true,
	AllowedPriorityClasses: []string{allowedClass}, AllowedRuntimeClasses: []string{allowedClass},
	Queue: fraudQueue, VClusterName: team, AllowedTolerations: []corev1.Toleration{teamToleration},
}

// createSchedulingClasses creates the classes the tests name: the Priority and
// RuntimeClass admission plugins refuse pods naming classes that do not exist.
func createSchedulingClasses(ctx context.Context) error {
	cl := env.cp.Client
	if _, err := cl.SchedulingV1().PriorityClasses().Create(ctx, &schedulingv1.PriorityClass{
		ObjectMeta: metav1.ObjectMeta{Name: allowedClass}, Value: 1000,
	}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	for _, name := range []string{allowedClass, foreignRuntime} {
		if _, err := cl.NodeV1().RuntimeClasses().Create(ctx, &nodev1.RuntimeClass{
			ObjectMeta: metav1.ObjectMeta{Name: name}, Handler: "runc",
		}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
	}
	return nil
}

// shaped is a share pod of team fraud as the webhook makes it from
// gpu-fraction f (canonical: the fraction the webhook records).
func shaped(name, f, canonical string) *testobj.PodWrapper {
	cm := contract.ShareConfigMapPrefix + name
	return tenantPod(name).GPUFraction(f).
		Label(contract.LabelTeam, team).Label(contract.LabelGPUShare, "true").
		Annotation(contract.AnnotationRole, contract.RoleWorkload).Annotation(contract.AnnotationGPUFraction, canonical).
		Annotation(contract.AnnotationShareConfigMap, cm).Annotation(contract.AnnotationDecisions, `[]`).
		SchedulingGate(contract.GateGPUShare).EnvFromConfigMap(cm)
}

// gapAttacks join TestAttacks: each passed the fence before the parameters
// carried the team policy.
func gapAttacks() map[string]struct {
	pod  *testobj.PodWrapper
	want []string
} {
	type a = struct {
		pod  *testobj.PodWrapper
		want []string
	}
	return map[string]a{
		// Scheduling settings the team policy does not allow.
		"own scheduler": {tenantPod("sched-own").SchedulerName("my-scheduler"),
			refusal(c.ReasonSchedulerNotAllowed, "spec.schedulerName=my-scheduler", "limit: schedulerName=default-scheduler")},
		"system-node-critical priority class": {tenantPod("prio-critical").PriorityClass("system-node-critical"),
			refusal(c.ReasonPriorityClassNotAllowed, "spec.priorityClassName=system-node-critical", "limit: priorityClasses="+allowedClass)},
		"runtime class not allowed": {tenantPod("runtime-foreign").RuntimeClass(foreignRuntime),
			refusal(c.ReasonRuntimeClassNotAllowed, "spec.runtimeClassName="+foreignRuntime, "limit: runtimeClasses="+allowedClass)},
		"another team's KAI queue": {tenantPod("queue-other").Label(contract.LabelKAIQueue, "other-queue"),
			refusal(c.ReasonQueueNotAllowed, "metadata.labels[kai.scheduler/queue]=other-queue", "limit: queue="+fraudQueue)},

		// Devices and shares.
		"MIG profile not allowed": {tenantPod("mig-3g").MIG("3g.40gb", "1"),
			refusal(c.ReasonMIGProfileNotAllowed, "nvidia.com/mig-3g.40gb", "limit: migProfiles=1g.10gb,2g.20gb")},
		"DRA resource claim": {tenantPod("dra-claim").ResourceClaim("gpu", "any-gpu"),
			refusal(c.ReasonResourceClaim, "spec.resourceClaims [gpu]", "limit: GPUs through nvidia.com/gpu")},
		"gpu-fraction with a whole GPU": {tenantPod("share-and-gpu").GPUFraction("0.5").GPUs("1"),
			refusal(c.ReasonShareWithGPUResource, "nvidia.com/gpu", "limit: a share or devices, not both")},
		"gpu-memory of a whole GPU": {tenantPod("memory-whole").GPUMemory("81920"),
			refusal(c.ReasonInvalidGPUShare, `metadata.annotations[gpu-memory]="81920" MiB is not less than the 81920 MiB`, "limit: below 81920 MiB")},
		"gpu-fraction and gpu-memory": {tenantPod("fraction-and-memory").GPUFraction("0.5").GPUMemory("20000"),
			refusal(c.ReasonInvalidGPUShare, "sets both gpu-fraction and gpu-memory", "limit: one of them")},
		"gpu-fraction over two devices": {tenantPod("fraction-devices").GPUFraction("0.5").Annotation(contract.AnnotationKAIFractionDevices, "2"),
			refusal(c.ReasonInvalidGPUShare, `metadata.annotations[gpu-fraction-num-devices]="2"`, "limit: a share of 1 GPU")},

		// gpuvc.dev/ metadata drives the share controller: forging it could
		// make a tenant pod a reservation holding any GPU UUID, or claim room
		// on a reservation.
		"forged reservation pod with another GPU's UUID": {tenantPod("forged-reservation").GPUs("1").
			Label(contract.LabelRole, contract.RoleReservation).Annotation(contract.AnnotationGPUUUID, "GPU-victim"),
			refusal(c.ReasonForgedMetadata, `metadata.labels[gpuvc.dev/role]="reservation"`, `metadata.annotations[gpuvc.dev/gpu-uuid]="GPU-victim"`,
				"limit: gpuvc.dev/ keys are written by gpuvc only")},
		"forged share assignment": {shaped("forged-assignment", "0.3", "0.3").
			Label(contract.LabelShareGroup, "fraud-res-1").Annotation(contract.AnnotationShareUnits, "100"),
			refusal(c.ReasonForgedMetadata, `metadata.labels[gpuvc.dev/share-group]="fraud-res-1"`, `metadata.annotations[gpuvc.dev/share-units]="100"`)},
		"recorded fraction larger than asked": {shaped("forged-fraction", "0.1", "0.9"),
			refusal(c.ReasonForgedMetadata, `metadata.annotations[gpuvc.dev/gpu-fraction]="0.9"`)},
		"share label without a share": {tenantPod("forged-share").Label(contract.LabelGPUShare, "true"),
			refusal(c.ReasonForgedMetadata, `metadata.labels[gpuvc.dev/gpu-share]="true"`)},
		"another team's label": {tenantPod("forged-team").Label(contract.LabelTeam, "ml"),
			refusal(c.ReasonForgedMetadata, `metadata.labels[gpuvc.dev/team]="ml"`)},
	}
}

// gapLegitimate join TestLegitimatePods: what the team policy allows, and
// pods as the webhook makes them, still pass.
func gapLegitimate() map[string]*testobj.PodWrapper {
	return map[string]*testobj.PodWrapper{
		"allowed priority class":               tenantPod("ok-priority").PriorityClass(allowedClass),
		"allowed runtime class":                tenantPod("ok-runtime").RuntimeClass(allowedClass),
		"the team's KAI queue":                 tenantPod("ok-queue").Label(contract.LabelKAIQueue, fraudQueue),
		"default scheduler named":              tenantPod("ok-scheduler").SchedulerName(contract.DefaultSchedulerName),
		"allowed MIG 2g.20gb":                  tenantPod("ok-mig-2g").MIG("2g.20gb", "1"),
		"share pod as the webhook makes it":    shaped("ok-shaped", "0.5", "0.5"),
		"fraction .25 recorded as 0.25":        shaped("ok-shaped-short", ".25", "0.25"),
		"gpu-fraction-num-devices 1":           tenantPod("ok-devices").GPUFraction("0.5").Annotation(contract.AnnotationKAIFractionDevices, "1"),
		"gpu-memory below one GPU's":           tenantPod("ok-memory-big").GPUMemory("81919"),
		"workload role and decisions":          tenantPod("ok-role").Label(contract.LabelTeam, team).Annotation(contract.AnnotationRole, contract.RoleWorkload).Annotation(contract.AnnotationDecisions, `[{"reason":"PoolPinned"}]`),
		"memory share as the webhook makes it": memoryShaped("ok-memory-shaped", "20000"),
	}
}

func memoryShaped(name, mib string) *testobj.PodWrapper {
	cm := contract.ShareConfigMapPrefix + name
	return tenantPod(name).GPUMemory(mib).
		Label(contract.LabelTeam, team).Label(contract.LabelGPUShare, "true").
		Annotation(contract.AnnotationRole, contract.RoleWorkload).Annotation(contract.AnnotationGPUMemory, mib).
		Annotation(contract.AnnotationShareConfigMap, cm).SchedulingGate(contract.GateGPUShare).EnvFromConfigMap(cm)
}

// TestFractionsOff: a team without GPU sharing gets no share pods, with or
// without the webhook; whole GPUs still pass. No MIG profile is allowed either.
func TestFractionsOff(t *testing.T) {
	localcp.ForTest(t)
	ctx := poll.TestContext(t)
	const ns = "team-nofrac"
	if err := createTeamNamespace(ctx, ns, "nofrac", c.PolicyParams(&syncer.TeamPolicy{
		Team: "nofrac", Pool: pool, SystemPool: systemPool, MaxGPUsPerPod: maxGPUs, VClusterName: "nofrac",
	})); err != nil {
		t.Fatal(err)
	}
	tenantNofrac, err := impersonate(vclusterUser("nofrac"))
	if err != nil {
		t.Fatal(err)
	}
	pods := tenantNofrac.CoreV1().Pods(ns)
	for name, tc := range map[string]struct {
		pod  *testobj.PodWrapper
		want []string
	}{
		"gpu-fraction": {testobj.Pod("fraction", ns).InPool(pool).GPUFraction("0.5"),
			refusal(c.ReasonFractionsDisabled, "team nofrac has GPU sharing disabled", "limit: fractions=false")},
		"gpu-memory": {testobj.Pod("memory", ns).InPool(pool).GPUMemory("20000"),
			refusal(c.ReasonFractionsDisabled, "team nofrac has GPU sharing disabled")},
		"share pod as the webhook of a sharing team makes it": {testobj.Pod("shaped", ns).InPool(pool).GPUFraction("0.5").
			Label(contract.LabelGPUShare, "true").Annotation(contract.AnnotationGPUFraction, "0.5").SchedulingGate(contract.GateGPUShare),
			refusal(c.ReasonFractionsDisabled)},
		"any MIG profile": {testobj.Pod("mig", ns).InPool(pool).MIG("1g.10gb", "1"),
			refusal(c.ReasonMIGProfileNotAllowed, "nvidia.com/mig-1g.10gb", "limit: migProfiles=(none)")},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := pods.Create(ctx, tc.pod.Obj(), metav1.CreateOptions{})
			refusedByFence(t, err, tc.want...)
		})
	}
	t.Run("whole GPU", func(t *testing.T) {
		if _, err := pods.Create(ctx, testobj.Pod("gpu", ns).InPool(pool).GPUs("1").Obj(), metav1.CreateOptions{}); err != nil {
			t.Fatalf("refused: %v", err)
		}
		deleteAtEnd(t, ns, "gpu")
	})
}

// TestReservedMetadataUpdates: after creation only gpuvc changes gpuvc.dev/
// metadata and lifts the share gate — the share controller (a trusted user)
// binds, and gpuvc reserve records its GPU once on its own reservation pod.
func TestReservedMetadataUpdates(t *testing.T) {
	localcp.ForTest(t)
	ctx := poll.TestContext(t)
	manager := grantPods(ctx, t, "test-manager-pods", c.DefaultParamsWriter)
	reserve := grantPods(ctx, t, "test-reserve-pods", "system:serviceaccount:"+teamNS+":"+contract.ReserveServiceAccount)
	tenantPods, managerPods, reservePods := env.tenant.CoreV1().Pods(teamNS), manager.CoreV1().Pods(teamNS), reserve.CoreV1().Pods(teamNS)

	if _, err := tenantPods.Create(ctx, shaped("meta", "0.5", "0.5").Obj(), metav1.CreateOptions{}); err != nil {
		t.Fatalf("a share pod as the webhook makes it was refused: %v", err)
	}
	deleteAtEnd(t, teamNS, "meta")
	reservation := tenantPod("meta-reservation").GPUs("1").Label(contract.LabelTeam, team).Label(contract.LabelRole, contract.RoleReservation).
		Annotation(contract.AnnotationRole, contract.RoleWorkload).Obj()
	if _, err := managerPods.Create(ctx, reservation, metav1.CreateOptions{}); err != nil {
		t.Fatalf("gpuvc creating a reservation pod was refused: %v", err)
	}
	deleteAtEnd(t, teamNS, reservation.Name)

	for _, step := range []struct {
		name  string
		pods  corev1client.PodInterface
		pod   string
		patch string
		want  []string // nil: admitted
	}{
		{"tenant removes the share gate", tenantPods, "meta", `{"spec":{"schedulingGates":null}}`,
			refusal(c.ReasonShareGateRemoved, "spec.schedulingGates", contract.GateGPUShare, "removed by "+vclusterUser(team), "limit: only gpuvc removes it")},
		{"tenant raises its recorded fraction", tenantPods, "meta", `{"metadata":{"annotations":{"gpuvc.dev/gpu-fraction":"0.9"}}}`,
			refusal(c.ReasonForgedMetadata, `metadata.annotations[gpuvc.dev/gpu-fraction]="0.9"`, "changed by "+vclusterUser(team))},
		{"tenant records a GPU UUID", tenantPods, "meta", `{"metadata":{"annotations":{"gpuvc.dev/gpu-uuid":"GPU-victim"}}}`,
			refusal(c.ReasonForgedMetadata, `metadata.annotations[gpuvc.dev/gpu-uuid]="GPU-victim"`)},
		{"tenant removes the team label", tenantPods, "meta", `{"metadata":{"labels":{"gpuvc.dev/team":null}}}`,
			refusal(c.ReasonForgedMetadata, `metadata.labels[gpuvc.dev/team]`, "(removed)")},
		{"tenant switches the KAI queue", tenantPods, "meta", `{"metadata":{"labels":{"kai.scheduler/queue":"other-queue"}}}`,
			refusal(c.ReasonQueueNotAllowed, "metadata.labels[kai.scheduler/queue]=other-queue", "limit: unchanged after creation")},
		{"tenant changes its own label", tenantPods, "meta", `{"metadata":{"labels":{"app":"v2"}}}`, nil},
		{"reserve records a UUID on a share pod", reservePods, "meta", `{"metadata":{"annotations":{"gpuvc.dev/gpu-uuid":"GPU-victim"}}}`,
			refusal(c.ReasonForgedMetadata, `metadata.annotations[gpuvc.dev/gpu-uuid]="GPU-victim"`)},
		{"reserve records its GPU on its reservation", reservePods, reservation.Name, `{"metadata":{"annotations":{"gpuvc.dev/gpu-uuid":"GPU-a100-0-0"}}}`, nil},
		{"reserve changes the recorded GPU", reservePods, reservation.Name, `{"metadata":{"annotations":{"gpuvc.dev/gpu-uuid":"GPU-victim"}}}`,
			refusal(c.ReasonForgedMetadata, `metadata.annotations[gpuvc.dev/gpu-uuid]="GPU-victim"`)},
		{"gpuvc binds the share pod", managerPods, "meta",
			`{"metadata":{"labels":{"gpuvc.dev/share-group":"meta-reservation"},"annotations":{"gpuvc.dev/share-units":"5000","gpuvc.dev/gpu-uuid":"GPU-a100-0-0"}},"spec":{"schedulingGates":null}}`, nil},
	} {
		t.Run(step.name, func(t *testing.T) {
			_, err := step.pods.Patch(ctx, step.pod, types.MergePatchType, []byte(step.patch), metav1.PatchOptions{})
			if step.want == nil {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			refusedByFence(t, err, step.want...)
		})
	}
}

// grantPods lets user write pods in every namespace and returns a client
// acting as that user.
func grantPods(ctx context.Context, t *testing.T, name, user string) kubernetes.Interface {
	t.Helper()
	grant(ctx, t, name, user, rbacv1.PolicyRule{
		APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "create", "update", "patch", "delete"},
	})
	cl, err := impersonate(user)
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

// TestOnlyKueueLiftsItsGate: a queueing team's ResourceQuota allows more than
// its ceiling, so Kueue's admission gate holds a waiting pod; after creation
// only Kueue's user removes it (the webhook puts it back when the team's
// vCluster drops it, so the fence sees the gate in place then).
func TestOnlyKueueLiftsItsGate(t *testing.T) {
	localcp.ForTest(t)
	ctx := poll.TestContext(t)
	kueue := grantPods(ctx, t, "test-kueue-pods", contract.KueueDefaultUser)
	ns := queuedPolicy.Namespace
	tenantQueued := queuedTeam(ctx, t)
	tenantPods, kueuePods := tenantQueued.CoreV1().Pods(ns), kueue.CoreV1().Pods(ns)
	queued := testobj.Pod("queued", ns).InPool(pool).GPUs("1").Label(contract.LabelKueueQueueName, contract.KueueLocalQueueName).SchedulingGate(contract.KueueAdmissionGate).Obj()
	if _, err := tenantPods.Create(ctx, queued, metav1.CreateOptions{}); err != nil {
		t.Fatalf("a queued pod as the webhook makes it was refused: %v", err)
	}
	deleteAtEnd(t, ns, "queued")
	ungate := []byte(`{"spec":{"schedulingGates":null}}`)
	_, err := tenantPods.Patch(ctx, "queued", types.MergePatchType, ungate, metav1.PatchOptions{})
	refusedByFence(t, err, refusal(c.ReasonKueueGateRemoved, "spec.schedulingGates", contract.KueueAdmissionGate, "removed by "+vclusterUser(queuedPolicy.Team), "limit: only Kueue lifts it")...)
	if _, err := kueuePods.Patch(ctx, "queued", types.MergePatchType, ungate, metav1.PatchOptions{}); err != nil {
		t.Fatalf("Kueue lifting its gate was refused: %v", err)
	}
}
