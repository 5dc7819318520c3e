package celpolicy_test

import (
	"context"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"github.com/gpuvc/gpuvc/api/contract"
	"github.com/gpuvc/gpuvc/e2e/localcp"
	"github.com/gpuvc/gpuvc/e2e/testsupport/poll"
	"github.com/gpuvc/gpuvc/e2e/testsupport/testobj"
	"github.com/gpuvc/gpuvc/syncer"
	c "github.com/gpuvc/gpuvc/syncer/celpolicy"
)

// The families of issue 22 (docs/syncer.md, "Tenant escapes by family"):
// every member the webhook removes or refuses, the fence refuses alone
// (escapeAttacks run in TestAttacks, with no webhook); the members it allows,
// the fence admits (TestEscapeFamiliesAdmitted).

// teamToleration is the toleration team fraud's policy allows
// (spec.placement.allowedTolerations).
var teamToleration = corev1.Toleration{Key: "example.com/maintenance", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}

func nodeProblem(key string, effect corev1.TaintEffect, seconds *int64) corev1.Toleration {
	return corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists, Effect: effect, TolerationSeconds: seconds}
}

func withServiceAccount(pw *testobj.PodWrapper, sa string) *testobj.PodWrapper {
	return pw.Edit(func(p *corev1.Pod) { p.Spec.ServiceAccountName = sa })
}

func escapeAttacks() map[string]struct {
	pod  *testobj.PodWrapper
	want []string
} {
	type a = struct {
		pod  *testobj.PodWrapper
		want []string
	}
	tol := func(name string, t corev1.Toleration, words ...string) a {
		return a{tenantPod(name).Toleration(t), refusal(c.ReasonTolerationOutsidePool, append(words,
			"limit: gpuvc.dev/pool Equal a100:NoSchedule", "at most 300 s", "example.com/maintenance|Exists||NoSchedule", "remove them")...)}
	}
	return map[string]a{
		// Class 1: tolerations outside the family.
		"toleration of the GPU health taint": tol("tol-health", corev1.Toleration{Key: contract.TaintGPUUnhealthy, Operator: corev1.TolerationOpExists},
			"[gpuvc.dev/gpu-unhealthy Exists]"),
		"toleration of a gpuvc runtime taint": tol("tol-runtime", corev1.Toleration{Key: "gpuvc.dev/unsafe-runtime", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
			"[gpuvc.dev/unsafe-runtime Exists:NoSchedule]"),
		"toleration of a cordoned node": tol("tol-unschedulable", nodeProblem(corev1.TaintNodeUnschedulable, corev1.TaintEffectNoSchedule, nil),
			"[node.kubernetes.io/unschedulable Exists:NoSchedule]"),
		"toleration of disk pressure": tol("tol-disk", nodeProblem("node.kubernetes.io/disk-pressure", corev1.TaintEffectNoSchedule, nil),
			"node.kubernetes.io/disk-pressure"),
		"toleration of another key (nvidia.com/gpu)": tol("tol-nvidia", corev1.Toleration{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
			"[nvidia.com/gpu Exists:NoSchedule]"),
		"allowed key with another effect": tol("tol-maint-any", corev1.Toleration{Key: teamToleration.Key, Operator: corev1.TolerationOpExists},
			"[example.com/maintenance Exists]"),
		"not-ready forever": tol("tol-notready-forever", nodeProblem(corev1.TaintNodeNotReady, corev1.TaintEffectNoExecute, nil),
			"[node.kubernetes.io/not-ready Exists:NoExecute]"),
		"unreachable 301 s": tol("tol-unreachable-301", nodeProblem(corev1.TaintNodeUnreachable, corev1.TaintEffectNoExecute, ptr.To[int64](301)),
			"node.kubernetes.io/unreachable Exists:NoExecute for 301 s"),
		"not-ready NoSchedule": tol("tol-notready-noschedule", nodeProblem(corev1.TaintNodeNotReady, corev1.TaintEffectNoSchedule, nil),
			"node.kubernetes.io/not-ready Exists:NoSchedule"),

		// Class 2: platform identities.
		"the control plane's service account": {withServiceAccount(tenantPod("sa-control-plane"), "vc-"+team),
			refusal(c.ReasonReservedServiceAccount, "spec.serviceAccountName=vc-fraud", "vCluster control plane", "limit: workload pods run as vc-workload-fraud or default", "remove")},
		"the reservation account": {withServiceAccount(tenantPod("sa-reserve"), contract.ReserveServiceAccount),
			refusal(c.ReasonReservedServiceAccount, "spec.serviceAccountName=gpuvc-reserve", "reservation pods")},

		// Class 3: Kueue labels (team fraud does not queue).
		"Kueue queue name on a team that does not queue": {tenantPod("kueue-queue").GPUs("1").Label(contract.LabelKueueQueueName, "gpuvc"),
			refusal(c.ReasonKueueQueueNotAllowed, "metadata.labels[kueue.x-k8s.io/queue-name]=gpuvc", "team fraud does not queue", "limit: kueueQueue=(none)")},
		"Kueue priority class": {tenantPod("kueue-priority").GPUs("1").Label(contract.LabelKueuePriorityClass, "cluster-critical"),
			refusal(c.ReasonKueuePriorityNotAllowed, "metadata.labels[kueue.x-k8s.io/priority-class]=cluster-critical", "limit: team fraud may name kueuePriorityClasses=(none)")},
		"Kueue prebuilt workload": {tenantPod("kueue-prebuilt").Label(contract.LabelKueuePrebuiltWorkload, "victim"),
			refusal(c.ReasonKueuePriorityNotAllowed, "metadata.labels[kueue.x-k8s.io/prebuilt-workload-name]=victim", "limit: no prebuilt workloads")},

		// Class 5: gpuvc's gates.
		"share gate without a share": {tenantPod("gate-share").SchedulingGate(contract.GateGPUShare),
			refusal(c.ReasonGateNotAllowed, "spec.schedulingGates [gpuvc.dev/gpu-share]", "limit: gpuvc.dev/gpu-share only on a pod with a gpu-fraction")},
		"Kueue gate without a queue": {tenantPod("gate-kueue").GPUs("1").SchedulingGate(contract.KueueAdmissionGate),
			refusal(c.ReasonGateNotAllowed, "spec.schedulingGates [kueue.x-k8s.io/admission]")},

		// Class 6: required node affinity outside the pool.
		"node affinity pool In [h100]": {tenantPod("affinity-h100").RequireNodeLabel(contract.LabelPool, corev1.NodeSelectorOpIn, "h100"),
			refusal(c.ReasonAffinityOutsidePool, "gpuvc.dev/pool In [h100]", "matches no node of pool a100", "remove that node affinity")},
		"node affinity pool NotIn [a100]": {tenantPod("affinity-notin").RequireNodeLabel(contract.LabelPool, corev1.NodeSelectorOpNotIn, pool),
			refusal(c.ReasonAffinityOutsidePool, "gpuvc.dev/pool NotIn [a100]")},
		"node affinity pool DoesNotExist": {tenantPod("affinity-dne").RequireNodeLabel(contract.LabelPool, corev1.NodeSelectorOpDoesNotExist),
			refusal(c.ReasonAffinityOutsidePool, "gpuvc.dev/pool DoesNotExist")},
	}
}

// TestEscapeFamiliesAdmitted: the members each family allows pass the fence
// alone, and run where the pool is.
func TestEscapeFamiliesAdmitted(t *testing.T) {
	localcp.ForTest(t)
	for name, tc := range map[string]struct {
		pod  *testobj.PodWrapper
		node string
	}{
		"not-ready and unreachable 300 s (Kubernetes' default)": {tenantPod("ok-node-problem").GPUs("1").
			Toleration(nodeProblem(corev1.TaintNodeNotReady, corev1.TaintEffectNoExecute, ptr.To[int64](300))).
			Toleration(nodeProblem(corev1.TaintNodeUnreachable, corev1.TaintEffectNoExecute, ptr.To[int64](0))), "a100-0"},
		"the team's allowed toleration":       {tenantPod("ok-team-toleration").Toleration(teamToleration), "a100"},
		"vCluster's workload service account": {withServiceAccount(tenantPod("ok-sa-workload"), "vc-workload-"+team), "a100"},
		"default service account":             {withServiceAccount(tenantPod("ok-sa-default"), "default"), "a100"},
		"a tenant's own gate":                 {tenantPod("ok-own-gate").SchedulingGate("example.com/wait"), ""},
		"share gate on a share pod":           {tenantPod("ok-share-gate").GPUFraction("0.5").SchedulingGate(contract.GateGPUShare), ""},
		"node affinity pool In [a100, h100]":  {tenantPod("ok-affinity").RequireNodeLabel(contract.LabelPool, corev1.NodeSelectorOpIn, pool, "h100"), "a100"},
		"node affinity on another label":      {tenantPod("ok-affinity-host").RequireNodeLabel("kubernetes.io/hostname", corev1.NodeSelectorOpIn, "a100-0"), "a100-0"},
	} {
		legitimate(t, name, tenant, tc.pod, tc.node)
	}
}

// queuedPolicy is a queueing team's policy: GPU pods wait in LocalQueue
// gpuvc, and may name WorkloadPriorityClass team-batch.
var queuedPolicy = syncer.TeamPolicy{
	Team: "queued", Namespace: "team-queued", Pool: pool, SystemPool: systemPool, MaxGPUsPerPod: maxGPUs,
	VClusterName: "queued", KueueQueue: contract.KueueLocalQueueName, AllowedKueuePriorityClasses: []string{"team-batch"},
}

// TestKueueFamily: with the webhook gone, the fence holds a queueing team's
// Kueue labels: the queue only on GPU pods and only the team's, the priority
// class only from the team's list, none of them changed by an update.
func TestKueueFamily(t *testing.T) {
	localcp.ForTest(t)
	ctx := poll.TestContext(t)
	ns := queuedPolicy.Namespace
	pods := queuedTeam(ctx, t).CoreV1().Pods(ns)
	queued := func(name string) *testobj.PodWrapper {
		return testobj.Pod(name, ns).InPool(pool).GPUs("1").Label(contract.LabelKueueQueueName, contract.KueueLocalQueueName).SchedulingGate(contract.KueueAdmissionGate)
	}
	for name, tc := range map[string]struct {
		pod  *testobj.PodWrapper
		want []string // nil: admitted
	}{
		"GPU pod in the team's queue":            {pod: queued("q-ok")},
		"GPU pod with the team's priority class": {pod: queued("q-batch").Label(contract.LabelKueuePriorityClass, "team-batch")},
		"CPU pod without a queue":                {pod: testobj.Pod("q-cpu", ns).InPool(pool)},
		"GPU pod without the queue (escapes Kueue)": {pod: testobj.Pod("q-none", ns).InPool(pool).GPUs("1"),
			want: refusal(c.ReasonKueueQueueNotAllowed, "metadata.labels[kueue.x-k8s.io/queue-name]=(unset)", "GPU pods of team queued wait in queue gpuvc")},
		"another queue": {pod: testobj.Pod("q-other", ns).InPool(pool).GPUs("1").Label(contract.LabelKueueQueueName, "other").SchedulingGate(contract.KueueAdmissionGate),
			want: refusal(c.ReasonKueueQueueNotAllowed, "queue-name]=other", "limit: kueueQueue=gpuvc")},
		"CPU pod in the queue": {pod: testobj.Pod("q-cpu-queued", ns).InPool(pool).Label(contract.LabelKueueQueueName, contract.KueueLocalQueueName),
			want: refusal(c.ReasonKueueQueueNotAllowed, "only GPU pods wait in Kueue")},
		"a higher WorkloadPriorityClass": {pod: queued("q-critical").Label(contract.LabelKueuePriorityClass, "cluster-critical"),
			want: refusal(c.ReasonKueuePriorityNotAllowed, "priority-class]=cluster-critical", "kueuePriorityClasses=team-batch")},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := pods.Create(ctx, tc.pod.Obj(), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			if tc.want == nil {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			refusedByFence(t, err, tc.want...)
		})
	}
	t.Run("update raising the priority class is refused", func(t *testing.T) {
		created, err := pods.Create(ctx, queued("q-raise").Obj(), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		deleteAtEnd(t, ns, created.Name)
		err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
			p, err := pods.Get(ctx, created.Name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			p.Labels[contract.LabelKueuePriorityClass] = "cluster-critical"
			_, err = pods.Update(ctx, p, metav1.UpdateOptions{})
			return err
		})
		refusedByFence(t, err, refusal(c.ReasonKueueQueueNotAllowed, "[kueue.x-k8s.io/priority-class]=cluster-critical", "unchanged after creation")...)
	})
}

var queuedOnce sync.Once

// queuedTeam creates the queueing team's namespace once and returns a client
// acting as its vCluster syncer.
func queuedTeam(ctx context.Context, t *testing.T) kubernetes.Interface {
	t.Helper()
	var err error
	queuedOnce.Do(func() {
		err = createTeamNamespace(ctx, queuedPolicy.Namespace, queuedPolicy.Team, c.PolicyParams(&queuedPolicy))
	})
	if err != nil {
		t.Fatal(err)
	}
	cl, err := impersonate(vclusterUser(queuedPolicy.Team))
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

// createPlatformServiceAccounts creates the accounts a team namespace has
// (vCluster's chart: vc-<release>, vc-workload-<release>; gpuvc: gpuvc-reserve),
// so the ServiceAccount admission plugin lets pods name them and the fence
// decides.
func createPlatformServiceAccounts(ctx context.Context, ns, release string) error {
	for _, name := range []string{"vc-" + release, "vc-workload-" + release, contract.ReserveServiceAccount} {
		_, err := env.cp.Client.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
	}
	return nil
}
