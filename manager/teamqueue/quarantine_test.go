package teamqueue_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"

	"github.com/gpuvc/gpuvc/api/contract"
	gpuvcv1 "github.com/gpuvc/gpuvc/api/v1alpha1"
	"github.com/gpuvc/gpuvc/e2e/testsupport/identity"
	"github.com/gpuvc/gpuvc/e2e/testsupport/poll"
	"github.com/gpuvc/gpuvc/e2e/testsupport/testobj"
	"github.com/gpuvc/gpuvc/gpu/health"
	"github.com/gpuvc/gpuvc/gpu/inventory"
	"github.com/gpuvc/gpuvc/gpu/nodeagent"
	"github.com/gpuvc/gpuvc/kind/nodepool"
)

// drainingAgent is the node agent's GPU health for a kwok node of the test's
// pool, as `gpuvc agent --gpu-failure=cordon-drain` runs it: its own
// ServiceAccount with nodeagent.RBACRules, events to the API server, the
// node's simulated GPUs, and the kubelet's pod-resources API (deviceKubelet)
// to find the pods on a failed GPU.
func drainingAgent(ctx context.Context, t *testing.T, node string, gpus int) (*nodeagent.Health, *deviceKubelet, inventory.Inventory) {
	t.Helper()
	inv, err := inventory.Simulate(inventory.Spec{Product: nodepool.ProductA100_80GB, Count: gpus, Seed: node})
	if err != nil {
		t.Fatal(err)
	}
	var uuids []string
	for _, g := range inv.GPUs {
		uuids = append(uuids, g.UUID)
	}
	kubelet, pr := serveDeviceKubelet(t, node, uuids)
	// gpuvc-agent-drain: the cordon-drain agent's ServiceAccount, with exactly its rules.
	_, client := identity.WithClusterRules(ctx, t, host.Client, host.Config, "gpuvc-system", "gpuvc-agent-drain", nodeagent.RBACRules(nodeagent.HealthCordonDrain, ""))
	b := events.NewBroadcaster(&events.EventSinkImpl{Interface: client.EventsV1()})
	if err := b.StartRecordingToSinkWithContext(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Shutdown)
	h := &nodeagent.Health{
		Client: client, NodeName: node, Policy: nodeagent.HealthCordonDrain, GPUs: gpus,
		Quarantine:  nodeagent.QuarantinePolicy{Probation: time.Hour, MaxFailures: 3},
		Recorder:    b.NewRecorder(scheme.Scheme, "gpuvc-agent"),
		OnUnhealthy: func(uuid string) { kubelet.setHealth(uuid, false) },
		OnHealthy:   func(uuid string) { kubelet.setHealth(uuid, true) },
		Owners: func(ctx context.Context) (map[string]nodeagent.DeviceOwner, error) {
			return nodeagent.DeviceOwners(ctx, pr)
		},
		Devices: nodeagent.DevicesOf(inv),
	}
	return h, kubelet, inv
}

// TestQuarantineDrainSendsAQueueingTeamsPodBackToItsQueue: team qd (1 GPU
// guaranteed, no borrowing) on pool "qdrain" (one kwok node, 2 simulated
// A100s) has two pods of one job, made through vCluster's own pod syncer:
// train-0 admitted by Kueue and given GPU 0 by the node's kubelet, train-1
// waiting in the team's queue. XID 79 on GPU 0: the node agent's cordon-drain
// (nodeagent.Health, its own RBAC, the pod found through the kubelet's
// pod-resources API) evicts train-0 and tells the team why on its pod; Kueue
// drops the pod's and its Workload's finalizers and the Workload goes with the
// pod (Kueue v0.17 never marks a deleted plain pod's Workload Finished), which
// releases the team's GPU: train-1 is admitted, ungated and runs on the node's
// healthy GPU (the node is neither tainted nor cordoned: 1 GPU of 2 is out). The
// job's replacement for train-0, made the same way, queues: gated, with a
// Workload pending in the team's ClusterQueue, until train-1 ends.
func TestQuarantineDrainSendsAQueueingTeamsPodBackToItsQueue(t *testing.T) {
	ctx := integration(t)
	const team, pool, node = "qd", "qdrain", "qdrain-0"
	gpuPool(ctx, t, pool, 2)
	createTeam(ctx, t, testobj.Team(team, pool).GPUs(1).Queued().MaxQueued(2).Obj())
	waitActive(ctx, t, team)
	ns := gpuvcv1.HostNamespace(team)
	dumpWorkloadsOnFailure(t, ns)
	vc := teamVCluster(ctx, t, team, pool)
	agent, kubelet, inv := drainingAgent(ctx, t, node, 2)

	// The team's job controller makes its pods in the team's cluster.
	jobPod := func(name string) *corev1.Pod {
		return testobj.Pod(name, "ml").GPUs("1").Label("job-name", "train").Obj()
	}
	train0, virtual0 := syncToHost(ctx, t, vc, jobPod("train-0"))
	workloadInItsOwnSecond(ctx, t, ns, train0.Name)
	train1, _ := syncToHost(ctx, t, vc, jobPod("train-1"))
	workloadInItsOwnSecond(ctx, t, ns, train1.Name)
	waitAdmitted(ctx, t, team, true, train0.Name)
	waitQueueFigures(ctx, t, team, queueFigures{admitted: 1, pending: 1, usedGPUs: 1})
	running, err := host.Client.CoreV1().Pods(ns).Get(ctx, train0.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	bad := kubelet.allocate(ctx, t, running)
	if bad != inv.GPUs[0].UUID {
		t.Fatalf("the kubelet gave train-0 %s, want GPU 0 (%s)", bad, inv.GPUs[0].UUID)
	}
	wl0, err := workloadOf(ctx, ns, train0.Name)
	if err != nil || wl0 == nil {
		t.Fatalf("the Workload of %s: %v, %v", train0.Name, wl0, err)
	}
	life := followWorkload(ctx, t, ns, wl0.GetName())

	// GPU 0 fails.
	failed := time.Now()
	if err := agent.Report(ctx, health.Event{Index: 0, UUID: bad, Kind: health.KindXID, XID: 79}); err != nil {
		t.Fatalf("the agent's enforcement after XID 79: %v", err)
	}
	waitPodGone(ctx, t, ns, train0.Name)
	t.Logf("XID 79 → train-0's host pod gone: %v", time.Since(failed).Round(time.Millisecond))
	t.Logf("train-0's Workload %s: %s", wl0.GetName(), life.waitDeleted(ctx, t, "the Workload of the evicted pod"))
	waitAdmitted(ctx, t, team, true, train1.Name)
	t.Logf("XID 79 → train-1 admitted and running: %v", time.Since(failed).Round(time.Millisecond))
	waitQueueFigures(ctx, t, team, queueFigures{admitted: 1, pending: 0, usedGPUs: 1})
	running, err = host.Client.CoreV1().Pods(ns).Get(ctx, train1.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := kubelet.allocate(ctx, t, running); got != inv.GPUs[1].UUID {
		t.Errorf("the kubelet gave train-1 %s, want the healthy GPU 1 (%s)", got, inv.GPUs[1].UUID)
	}
	n, err := host.Client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if n.Spec.Unschedulable || slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == contract.TaintGPUUnhealthy }) {
		t.Errorf("one GPU of 2 out cordoned or tainted node %s: unschedulable %v, taints %v", node, n.Spec.Unschedulable, n.Spec.Taints)
	}

	// What the team is told, on the host pod and, through vCluster's event
	// syncer, on its own pod: the GPU, the error, and what becomes of its quota.
	failure := "GPU 0 (" + bad + "): XID 79 (GPU has fallen off the bus) on node " + node + " failed and is out of service"
	note := hostEventNote(ctx, t, ns, train0.Name, nodeagent.ReasonEvicted)
	for _, want := range []string{"evicted: " + failure, "GPU-seconds lost",
		"the GPU quota it held in queue " + contract.KueueLocalQueueName + " is released, and a pod created to replace it waits in that queue for admission"} {
		if !strings.Contains(note, want) {
			t.Errorf("the %s event on %s: %q; want it to contain %q", nodeagent.ReasonEvicted, train0.Name, note, want)
		}
	}
	seenByTeam(ctx, t, vc, train0, virtual0, nodeagent.ReasonEvicted, failure)

	// The job replaces train-0: the new pod queues like any other.
	replacement, _ := syncToHost(ctx, t, vc, jobPod("train-0-retry"))
	if replacement.Labels[contract.LabelKueueQueueName] != contract.KueueLocalQueueName || !gated(replacement) {
		t.Fatalf("the replacement escaped the team's queue: %s", poll.DescribePod(replacement))
	}
	if replacement.Labels["job-name"] != "train" {
		t.Errorf("the replacement lost the job's labels: %v", replacement.Labels)
	}
	workloadInItsOwnSecond(ctx, t, ns, replacement.Name)
	waitQueueFigures(ctx, t, team, queueFigures{admitted: 1, pending: 1, usedGPUs: 1})
	waitAdmitted(ctx, t, team, true, train1.Name)
	wl, err := workloadOf(ctx, ns, replacement.Name)
	if err != nil {
		t.Fatal(err)
	}
	if st, _ := condition(wl, "QuotaReserved"); st == "True" {
		t.Errorf("the replacement's Workload %s reserved quota the team does not have: %s", wl.GetName(), workloadConditions(wl))
	}

	// train-1 ends; the replacement runs, on the GPU that is still healthy.
	complete(ctx, t, team, train1.Name)
	waitAdmitted(ctx, t, team, true, replacement.Name)
	running, err = host.Client.CoreV1().Pods(ns).Get(ctx, replacement.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := kubelet.allocate(ctx, t, running); got != inv.GPUs[1].UUID {
		t.Errorf("the kubelet gave the replacement %s, want GPU 1 (%s): GPU 0 is out", got, inv.GPUs[1].UUID)
	}
}
