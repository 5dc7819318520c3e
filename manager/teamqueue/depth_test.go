package teamqueue_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/gpuvc/gpuvc/api/contract"
	gpuvcv1 "github.com/gpuvc/gpuvc/api/v1alpha1"
	"github.com/gpuvc/gpuvc/e2e/testsupport/poll"
	"github.com/gpuvc/gpuvc/e2e/testsupport/testobj"
	"github.com/gpuvc/gpuvc/kind/localkueue"
	"github.com/gpuvc/gpuvc/syncer"
)

// waitingPod returns the name of one of team's pods that waits in the queue.
func waitingPod(ctx context.Context, t *testing.T, team string) string {
	t.Helper()
	list, err := host.Client.CoreV1().Pods(gpuvcv1.HostNamespace(team)).List(ctx, metav1.ListOptions{LabelSelector: contract.LabelKueueQueueName})
	if err != nil {
		t.Fatal(err)
	}
	for i := range list.Items {
		if p := &list.Items[i]; gated(p) && p.DeletionTimestamp == nil {
			return p.Name
		}
	}
	t.Fatalf("team %s has no waiting pod", team)
	return ""
}

// runningPod returns the name of one of team's admitted, running pods.
func runningPod(ctx context.Context, t *testing.T, team string) string {
	t.Helper()
	list, err := host.Client.CoreV1().Pods(gpuvcv1.HostNamespace(team)).List(ctx, metav1.ListOptions{LabelSelector: contract.LabelKueueQueueName})
	if err != nil {
		t.Fatal(err)
	}
	for i := range list.Items {
		if p := &list.Items[i]; !gated(p) && p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
			return p.Name
		}
	}
	t.Fatalf("team %s has no running pod", team)
	return ""
}

// queuedGPUs waits until team's status shows used and queued whole GPUs.
func queuedGPUs(ctx context.Context, t *testing.T, team string, used, queued int64) {
	t.Helper()
	poll.UntilSeen(ctx, t, time.Minute, fmt.Sprintf("team %s status: %d GPUs used, %d queued", team, used, queued), func(ctx context.Context) (bool, string, error) {
		tm := &gpuvcv1.Team{}
		if err := c.Get(ctx, types.NamespacedName{Name: team}, tm); err != nil {
			return false, "", err
		}
		if tm.Status.Queue == nil {
			return false, "no status.queue", nil
		}
		for _, f := range tm.Status.Queue.Flavors {
			if f.Resource == contract.ResourceGPU {
				return f.Used == used && f.Queued == queued, fmt.Sprintf("%+v", f), nil
			}
		}
		return false, fmt.Sprintf("%+v", *tm.Status.Queue), nil
	})
}

// TestPodsBeyondTheCeilingWaitUpToTheQueueDepth: a team with a ceiling of 2
// GPUs (1 guaranteed, 1 borrowed from an idle team of its pool) and
// spec.queueing.maxQueued.gpus 2 has a ResourceQuota of 4: four one-GPU pods
// are all created, two run and two wait in Kueue (status.queue shows 2 queued,
// a waiting pod gets a Queued event), a fifth is refused (QueueFull); when a
// running pod ends, a waiting one runs.
func TestPodsBeyondTheCeilingWaitUpToTheQueueDepth(t *testing.T) {
	ctx := integration(t)
	gpuPool(ctx, t, "deep", 4)
	createTeam(ctx, t, testobj.Team("idle", "deep").GPUs(1).Queued().Obj())
	createTeam(ctx, t, testobj.Team("deep", "deep").GPUs(1).Borrow(1).MaxQueued(2).Obj())
	waitActive(ctx, t, "idle")
	waitActive(ctx, t, "deep")
	dumpWorkloadsOnFailure(t, gpuvcv1.HostNamespace("deep"))
	poll.UntilSeen(ctx, t, time.Minute, "ResourceQuota of 2 (ceiling) + 2 (queue depth) GPUs", func(ctx context.Context) (bool, string, error) {
		got, err := quotaHardGPUs(ctx, "deep")
		return got == "4", "requests.nvidia.com/gpu=" + got, err
	})

	// Four pods: created and gated; Kueue admits the ceiling (the pool's node
	// has room for more, but the team is guaranteed 1 and may borrow 1 of the
	// idle team's), the rest wait.
	gpuPods(ctx, t, "deep", "d", 4)
	waitPods(ctx, t, "deep", 2, 2)
	queuedGPUs(ctx, t, "deep", 2, 2)
	ns := gpuvcv1.HostNamespace("deep")
	podEvent(ctx, t, ns, waitingPod(ctx, t, "deep"), corev1.EventTypeWarning, "Queued", "team deep")

	// Beyond ceiling + queue depth: refused, saying why (gpuvc's webhook, ahead
	// of the ResourceQuota that would refuse it too).
	over := testobj.Pod("d-over", ns).GPUs("1").Obj()
	_, err := host.Client.CoreV1().Pods(ns).Create(ctx, over, metav1.CreateOptions{})
	if err == nil || !strings.Contains(err.Error(), syncer.ReasonQueueFull) || !strings.Contains(err.Error(), "limit: 4 = 2 the team may run with") || !strings.Contains(err.Error(), "spec.queueing.maxQueued") {
		t.Fatalf("a pod beyond ceiling + queue depth was not refused with the queue's figures: %v", err)
	}
	t.Logf("refused: %v", err)

	// Room frees: a waiting pod is admitted.
	complete(ctx, t, "deep", runningPod(ctx, t, "deep"))
	waitPods(ctx, t, "deep", 2, 1)
	queuedGPUs(ctx, t, "deep", 2, 1)
}

// impersonating is a client acting as user in groups.
func impersonating(t *testing.T, user string, groups ...string) kubernetes.Interface {
	t.Helper()
	cfg := rest.CopyConfig(host.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: append(groups, "system:authenticated")}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// ungate removes Kueue's admission gate from a pod as cs, optionally adding a
// label in the same update (as vCluster's syncer sends the virtual pod's
// labels and gates together).
func ungate(ctx context.Context, cs kubernetes.Interface, ns, name string, label string, dryRun bool) (*corev1.Pod, error) {
	p, err := cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	var kept []corev1.PodSchedulingGate
	for _, g := range p.Spec.SchedulingGates {
		if g.Name != contract.KueueAdmissionGate {
			kept = append(kept, g)
		}
	}
	p.Spec.SchedulingGates = kept
	if label != "" {
		p.Labels[label] = "synced"
	}
	opts := metav1.UpdateOptions{}
	if dryRun {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	return cs.CoreV1().Pods(ns).Update(ctx, p, opts)
}

// TestOnlyKueueLiftsTheAdmissionGate: the gate is what holds a waiting pod
// (the quota allows more than the ceiling), so nobody but Kueue may remove it.
// A member of the team with edit rights in its host namespace and the cluster
// admin are refused with a message naming the gate and the limit; the team's
// vCluster syncer, which sends the virtual pod's gates (none) with every
// update, gets its other changes through and the gate kept; Kueue's identity
// may remove it (dry run: Kueue itself did so for the running pod).
func TestOnlyKueueLiftsTheAdmissionGate(t *testing.T) {
	ctx := integration(t)
	gpuPool(ctx, t, "fence", 1)
	createTeam(ctx, t, testobj.Team("fence", "fence").GPUs(1).Queued().Obj())
	waitActive(ctx, t, "fence")
	ns := gpuvcv1.HostNamespace("fence")
	gpuPods(ctx, t, "fence", "f", 2)
	waitPods(ctx, t, "fence", 1, 1)
	waiting := waitingPod(ctx, t, "fence")

	member := "alice@fence.example.com"
	rb := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "member-edit", Namespace: ns},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "edit"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: member}},
	}
	if _, err := host.Client.RbacV1().RoleBindings(ns).Create(ctx, rb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for who, cs := range map[string]kubernetes.Interface{
		"a team member":     impersonating(t, member),
		"the cluster admin": host.Client,
	} {
		_, err := ungate(ctx, cs, ns, waiting, "", false)
		if err == nil || !strings.Contains(err.Error(), syncer.ReasonKueueGateRemoved) || !strings.Contains(err.Error(), "only Kueue lifts it") {
			t.Errorf("%s removing Kueue's admission gate: %v; want a %s refusal", who, err, syncer.ReasonKueueGateRemoved)
			continue
		}
		t.Logf("%s refused: %v", who, err)
	}

	vc := impersonating(t, "system:serviceaccount:"+ns+":vc-fence", "system:serviceaccounts", "system:serviceaccounts:"+ns)
	poll.Until(ctx, t, 2*time.Minute, "the team's vCluster ServiceAccount can update its pods", func(ctx context.Context) (bool, error) {
		_, err := vc.CoreV1().Pods(ns).Get(ctx, waiting, metav1.GetOptions{})
		return err == nil, nil
	})
	got, err := ungate(ctx, vc, ns, waiting, "vcluster-sync", false)
	if err != nil {
		t.Fatalf("the vCluster syncer's update was refused: %v", err)
	}
	if !gated(got) || got.Labels["vcluster-sync"] != "synced" {
		t.Fatalf("the vCluster syncer's update: want its label stored and Kueue's gate kept, got %s", poll.DescribePod(got))
	}

	kueueUser := localkueue.User(localkueue.DefaultNamespace)
	asKueue := impersonating(t, kueueUser, "system:serviceaccounts", "system:serviceaccounts:"+localkueue.DefaultNamespace)
	if got, err := ungate(ctx, asKueue, ns, waiting, "", true); err != nil || gated(got) {
		t.Fatalf("Kueue's identity %s removing its gate (dry run): %v; gated %v", kueueUser, err, got != nil && gated(got))
	}
	waitPods(ctx, t, "fence", 1, 1)
}
