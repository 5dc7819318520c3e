package teamqueue_test

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpuvc/gpuvc/api/contract"
	gpuvcv1 "github.com/gpuvc/gpuvc/api/v1alpha1"
	"github.com/gpuvc/gpuvc/e2e/testsupport/poll"
	"github.com/gpuvc/gpuvc/e2e/testsupport/testobj"
	"github.com/gpuvc/gpuvc/e2e/testsupport/vcsync"
	"github.com/gpuvc/gpuvc/syncer/queued"
	"github.com/gpuvc/gpuvc/vclusters"
)

// virtualDefaults is a plain namespace (no team: no webhook) whose default
// ServiceAccount mounts no token: a dry-run create there returns a pod as the
// team's virtual API server (same Kubernetes version) stores it, minus the token
// volume vcsync does not translate.
const virtualDefaults = "virtual-defaults"

// teamVCluster is the team's vCluster as its pod syncer runs (vcsync): gpuvc's
// Helm values for the team's pool, the pool's nodes, and host writes sent to the
// real API server with the identity of the vCluster the manager installed.
func teamVCluster(ctx context.Context, t *testing.T, team, pool string) vcsync.VCluster {
	t.Helper()
	ns := gpuvcv1.HostNamespace(team)
	// The chart's ServiceAccounts: the vCluster's own, and the one it puts on
	// every synced pod.
	for _, sa := range []string{"vc-" + team, "vc-workload-" + team} {
		poll.Until(ctx, t, 2*time.Minute, "ServiceAccount "+ns+"/"+sa+" of the team's vCluster release", func(ctx context.Context) (bool, error) {
			_, err := host.Client.CoreV1().ServiceAccounts(ns).Get(ctx, sa, metav1.GetOptions{})
			return err == nil, client.IgnoreNotFound(err)
		})
	}
	cfg := rest.CopyConfig(host.Config)
	cfg.Impersonate = rest.ImpersonationConfig{
		UserName: "system:serviceaccount:" + ns + ":vc-" + team,
		Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"},
	}
	writer, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	values, err := vclusters.HelmValues(vclusters.Spec{Name: team, Namespace: ns, Pool: pool, KubeconfigServer: "https://127.0.0.1:8443"})
	if err != nil {
		t.Fatal(err)
	}
	nodes, err := host.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: contract.LabelPool + "=" + pool})
	if err != nil {
		t.Fatal(err)
	}
	info, err := host.Client.Discovery().ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	return vcsync.VCluster{Name: team, HostNamespace: ns, Values: values, Nodes: nodes.Items, HostVersion: info.GitVersion, Host: writer}
}

// virtualPod returns p as the virtual API server stores it (defaults applied).
func virtualPod(ctx context.Context, t *testing.T, p *corev1.Pod) *corev1.Pod {
	t.Helper()
	cs := host.Client.CoreV1()
	if _, err := cs.Namespaces().Create(ctx, testobj.Namespace(virtualDefaults, nil), metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	if err := host.WaitForServiceAccount(ctx, virtualDefaults, "default"); err != nil {
		t.Fatal(err)
	}
	sa, err := cs.ServiceAccounts(virtualDefaults).Get(ctx, "default", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if sa.AutomountServiceAccountToken == nil || *sa.AutomountServiceAccountToken {
		sa.AutomountServiceAccountToken = ptr.To(false)
		if _, err := cs.ServiceAccounts(virtualDefaults).Update(ctx, sa, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	in := p.DeepCopy()
	in.Namespace = virtualDefaults
	out, err := cs.Pods(virtualDefaults).Create(ctx, in, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	if err != nil {
		t.Fatalf("defaulting the virtual pod %s: %v", p.Name, err)
	}
	out.Namespace, out.UID, out.ResourceVersion, out.ManagedFields = p.Namespace, "", "", nil
	out.CreationTimestamp = metav1.Time{}
	return out
}

// syncToHost runs vCluster's own SyncToHost for a virtual pod and returns the
// host pod as the API server stored it (after gpuvc's and Kueue's webhooks) and
// the virtual pod as the virtual API server stores it.
func syncToHost(ctx context.Context, t *testing.T, vc vcsync.VCluster, manifest *corev1.Pod) (host, virtual *corev1.Pod) {
	t.Helper()
	virtual = virtualPod(ctx, t, manifest)
	res := vcsync.SyncToHost(t, vc, virtual)
	for _, w := range res.Host {
		if w.Verb == "create" {
			if w.Err != nil {
				t.Fatalf("the host refused vCluster's pod for %s/%s: %v", manifest.Namespace, manifest.Name, w.Err)
			}
			return w.Answer.(*corev1.Pod), virtual
		}
	}
	t.Fatalf("vCluster created no host pod for %s/%s (requeue %v, error %v)", manifest.Namespace, manifest.Name, res.Requeue, res.Err)
	return nil, nil
}

// seenByTeam takes the host pod's event with reason through vCluster's event
// syncer and checks the team's virtual pod gets it, with note in its message.
func seenByTeam(ctx context.Context, t *testing.T, vc vcsync.VCluster, hostPod, virtual *corev1.Pod, reason, note string) {
	t.Helper()
	var hostEvent *corev1.Event
	poll.Until(ctx, t, time.Minute, "a "+reason+" event on host pod "+hostPod.Name, func(ctx context.Context) (bool, error) {
		evs, err := host.Client.CoreV1().Events(hostPod.Namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		for i := range evs.Items {
			if e := &evs.Items[i]; e.InvolvedObject.Name == hostPod.Name && e.Reason == reason {
				hostEvent = e
				return true, nil
			}
		}
		return false, nil
	})
	// The host pod as created (a preempted one may be gone already): vCluster
	// keeps the host ↔ virtual name mapping in its store.
	got := vcsync.EventToVirtual(t, vc, hostEvent, hostPod, virtual)
	if got == nil {
		t.Fatalf("vCluster did not copy the %s event of %s to the virtual pod %s/%s", reason, hostPod.Name, virtual.Namespace, virtual.Name)
	}
	if got.InvolvedObject.Namespace != virtual.Namespace || got.InvolvedObject.Name != virtual.Name || got.Reason != reason || !strings.Contains(got.Message, note) {
		t.Errorf("the team sees %s %s on %s/%s: %q; want %s on %s/%s containing %q", got.Type, got.Reason, got.InvolvedObject.Namespace, got.InvolvedObject.Name, got.Message,
			reason, virtual.Namespace, virtual.Name, note)
	}
	t.Logf("the team sees on %s/%s: %s %s: %s", virtual.Namespace, virtual.Name, got.Type, got.Reason, got.Message)
}

// TestVirtualGPUPodsQueueThroughVClusterTranslation: a team's virtual GPU pods
// become host pods through vCluster's own pod syncer (v0.36.1, vcsync), sent
// with the vCluster's identity through gpuvc's webhook (queue-name label, pool)
// and Kueue's (admission gate). Team vq (1 GPU guaranteed, may borrow 1 that
// nobody lends) on pool "vcpool" (one node, 1 GPU): the first pod is admitted
// and runs on the pool's node under vCluster's name for it; the second waits,
// gated, and is told why (gpuvc's Queued event on the host pod, which vCluster
// syncs to the virtual pod: vCluster's own event syncer shows it on the team's
// pod); it is admitted when the first completes. A higher-priority virtual pod
// then preempts it, and the team sees gpuvc's Preempted and Kueue's Stopped on
// its pod.
func TestVirtualGPUPodsQueueThroughVClusterTranslation(t *testing.T) {
	ctx := integration(t)
	gpuPool(ctx, t, "vcpool", 1)
	createTeam(ctx, t, testobj.Team("vq", "vcpool").GPUs(1).Borrow(1).WorkloadPriorityClasses(pcHigh).Obj())
	waitActive(ctx, t, "vq")
	ns := gpuvcv1.HostNamespace("vq")
	dumpWorkloadsOnFailure(t, ns)
	vc := teamVCluster(ctx, t, "vq", "vcpool")

	var hostNames []string
	var hostPods, virtualPods []*corev1.Pod
	for _, name := range []string{"train-0", "train-1"} {
		p, v := syncToHost(ctx, t, vc, testobj.Pod(name, "ml").GPUs("1").Obj())
		hostPods, virtualPods = append(hostPods, p), append(virtualPods, v)
		if want := vcsync.HostName(vc, name, "ml"); p.Name != want {
			t.Errorf("host pod %s, want vCluster's name %s", p.Name, want)
		}
		if p.Labels[contract.LabelKueueQueueName] != contract.KueueLocalQueueName || !gated(p) {
			t.Fatalf("vCluster's host pod for ml/%s was not queued by gpuvc and gated by Kueue: %s", name, poll.DescribePod(p))
		}
		if p.Spec.NodeSelector[contract.LabelPool] != "vcpool" {
			t.Errorf("host pod %s not pinned to pool vcpool: nodeSelector %v", p.Name, p.Spec.NodeSelector)
		}
		hostNames = append(hostNames, p.Name)
		workloadInItsOwnSecond(ctx, t, ns, p.Name)
	}
	waitAdmitted(ctx, t, "vq", true, hostNames[0])
	running, err := host.Client.CoreV1().Pods(ns).Get(ctx, hostNames[0], metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if running.Spec.NodeName != "vcpool-0" {
		t.Errorf("admitted pod %s runs on %q, want the pool's node vcpool-0", running.Name, running.Spec.NodeName)
	}

	poll.UntilSeen(ctx, t, time.Minute, "gpuvc's Queued event on the waiting host pod "+hostNames[1], func(ctx context.Context) (bool, string, error) {
		evs, err := host.Client.EventsV1().Events(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, "", err
		}
		var seen []string
		for _, e := range evs.Items {
			if e.Regarding.Name != hostNames[1] {
				continue
			}
			seen = append(seen, e.Reason+": "+e.Note)
			if e.Reason == queued.ReasonQueued && strings.Contains(e.Note, "team vq uses 1 of 1 guaranteed GPUs") {
				return true, "", nil
			}
		}
		return false, strings.Join(seen, " | "), nil
	})

	seenByTeam(ctx, t, vc, hostPods[1], virtualPods[1], queued.ReasonQueued, "team vq uses 1 of 1 guaranteed GPUs")

	complete(ctx, t, "vq", hostNames[0])
	waitAdmitted(ctx, t, "vq", true, hostNames[1])

	// A higher-priority virtual pod preempts train-1; the team sees why on its pod.
	priorityClasses(ctx, t)
	urgent, _ := syncToHost(ctx, t, vc, testobj.Pod("urgent", "ml").GPUs("1").Label(labelWorkloadPriorityClass, pcHigh).Obj())
	waitAdmitted(ctx, t, "vq", true, urgent.Name)
	seenByTeam(ctx, t, vc, hostPods[1], virtualPods[1], queued.ReasonPreempted, "preempted: a higher-priority pod of team vq needed its GPUs")
	seenByTeam(ctx, t, vc, hostPods[1], virtualPods[1], "Stopped", "Preempted to accommodate a workload")
}
