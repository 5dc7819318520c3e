package teamqueue_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gpuvc/gpuvc/api/contract"
	gpuvcv1 "github.com/gpuvc/gpuvc/api/v1alpha1"
	"github.com/gpuvc/gpuvc/e2e/testsupport/poll"
	"github.com/gpuvc/gpuvc/e2e/testsupport/testobj"
	"github.com/gpuvc/gpuvc/manager/teamqueue"
	"github.com/gpuvc/gpuvc/syncer"
)

// gpuPods creates n one-GPU pods named <prefix>-<i> in team's namespace, as
// vCluster would on the host: through gpuvc's webhook, which sends them to the
// team's queue.
func gpuPods(ctx context.Context, t *testing.T, team, prefix string, n int) {
	t.Helper()
	ns := gpuvcv1.HostNamespace(team)
	for i := range n {
		p := testobj.Pod(fmt.Sprintf("%s-%d", prefix, i), ns).GPUs("1").Obj()
		created, err := host.Client.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("creating pod %s/%s: %v", ns, p.Name, err)
		}
		if created.Labels[contract.LabelKueueQueueName] != contract.KueueLocalQueueName || !gated(created) {
			t.Fatalf("pod %s/%s was not queued by gpuvc and gated by Kueue: %s", ns, p.Name, poll.DescribePod(created))
		}
	}
}

func gated(p *corev1.Pod) bool {
	for _, g := range p.Spec.SchedulingGates {
		if g.Name == contract.KueueAdmissionGate {
			return true
		}
	}
	return false
}

// podsOf counts a team's queued pods (its GPU pods; not its vCluster's control
// plane) that Kueue admitted and that run, and those that wait (still gated);
// pods on their way out count in neither.
func podsOf(ctx context.Context, team string) (running, waiting int, seen string, err error) {
	list, err := host.Client.CoreV1().Pods(gpuvcv1.HostNamespace(team)).List(ctx, metav1.ListOptions{LabelSelector: contract.LabelKueueQueueName})
	if err != nil {
		return 0, 0, "", err
	}
	var states []string
	for i := range list.Items {
		p := &list.Items[i]
		switch {
		case p.DeletionTimestamp != nil || p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded:
		case gated(p):
			waiting++
		case p.Status.Phase == corev1.PodRunning:
			running++
		}
		states = append(states, p.Name+":"+string(p.Status.Phase))
	}
	return running, waiting, strings.Join(states, " "), nil
}

func waitPods(ctx context.Context, t *testing.T, team string, running, waiting int) {
	t.Helper()
	last := "nothing yet"
	poll.UntilSeen(ctx, t, 2*time.Minute, fmt.Sprintf("team %s: %d pods running, %d waiting", team, running, waiting), func(ctx context.Context) (bool, string, error) {
		r, w, seen, err := podsOf(ctx, team)
		if err != nil {
			return false, last + " (then: " + err.Error() + ")", nil
		}
		last = fmt.Sprintf("running %d, waiting %d: %s", r, w, seen)
		return r == running && w == waiting, last, nil
	})
}

func waitActive(ctx context.Context, t testing.TB, team string) {
	t.Helper()
	poll.UntilSeen(ctx, t, time.Minute, "ClusterQueue of "+team+" Active", func(ctx context.Context) (bool, string, error) {
		cq, err := kueueObject(ctx, "ClusterQueue", "", teamqueue.ClusterQueueName(team))
		if err != nil {
			return false, "", err
		}
		st, msg := condition(cq, "Active")
		return st == "True", st + ": " + msg, nil
	})
	poll.Until(ctx, t, time.Minute, "LocalQueue of "+team, func(ctx context.Context) (bool, error) {
		lq, err := kueueObject(ctx, "LocalQueue", gpuvcv1.HostNamespace(team), contract.KueueLocalQueueName)
		if err != nil {
			return false, nil
		}
		st, _ := condition(lq, "Active")
		return st == "True", nil
	})
}

// TestTwoTeamsBorrowAndReclaim: two teams share the a100 pool's 8 whole GPUs
// (kwok node a100-0), 4 guaranteed each. One borrows the other's idle GPUs up to
// its borrowing limit; a pod beyond guarantee plus limit waits (queue depth 1),
// one beyond that is refused (QueueFull); when the lender needs its
// guarantee back, Kueue preempts the borrowed pods and admits the lender's.
func TestTwoTeamsBorrowAndReclaim(t *testing.T) {
	integration(t)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	createTeam(ctx, t, testobj.Team("lender", "a100").GPUs(4).Queued().Obj())
	createTeam(ctx, t, testobj.Team("borrower", "a100").GPUs(4).Borrow(2).MaxQueued(1).Obj())
	waitActive(ctx, t, "lender")
	waitActive(ctx, t, "borrower")
	dumpWorkloadsOnFailure(t, gpuvcv1.HostNamespace("lender"))
	dumpWorkloadsOnFailure(t, gpuvcv1.HostNamespace("borrower"))

	// Borrowing up to the limit: 4 guaranteed + 2 borrowed run.
	gpuPods(ctx, t, "borrower", "b", 6)
	waitPods(ctx, t, "borrower", 6, 0)
	poll.UntilSeen(ctx, t, time.Minute, "the borrower's Team status: 6 GPUs in use, 2 borrowed", func(ctx context.Context) (bool, string, error) {
		tm := &gpuvcv1.Team{}
		if err := c.Get(ctx, types.NamespacedName{Name: "borrower"}, tm); err != nil {
			return false, "", err
		}
		q := tm.Status.Queue
		if q == nil {
			return false, "no status.queue", nil
		}
		return q.UsedGPUs == 6 && q.BorrowedGPUs == 2 && q.GuaranteedGPUs == 4 && q.BorrowingLimitGPUs == 2 && q.AdmittedPods == 6,
			fmt.Sprintf("%+v", *q), nil
	})

	// The ceiling: a 7th GPU pod waits (though the lender's 2 other GPUs are
	// idle), an 8th is beyond the queue depth and refused by the ResourceQuota.
	gpuPods(ctx, t, "borrower", "b-wait", 1)
	waitPods(ctx, t, "borrower", 6, 1)
	p := testobj.Pod("b-over", gpuvcv1.HostNamespace("borrower")).GPUs("1").Obj()
	_, err := host.Client.CoreV1().Pods(p.Namespace).Create(ctx, p, metav1.CreateOptions{})
	if err == nil || !strings.Contains(err.Error(), syncer.ReasonQueueFull) {
		t.Fatalf("a pod beyond guarantee + borrowing limit + queue depth was not refused: %v", err)
	}

	// Reclaim: the lender wants its 4; 2 are free, 2 come back by preemption.
	// The borrower's waiting pod keeps waiting: the cohort has nothing to lend.
	gpuPods(ctx, t, "lender", "l", 4)
	waitPods(ctx, t, "lender", 4, 0)
	waitPods(ctx, t, "borrower", 4, 1)
}

// TestQuotaCeilingHoldsWhileKueueIsDown: the ResourceQuota of a queueing team
// allows more than its ceiling, so with Kueue stopped the ceiling rests on the
// gate. A team with a ceiling of 2 (guaranteed) runs 2 pods and has 1 waiting; Kueue stops;
// a new GPU pod is refused (Kueue's webhook fails closed for pods that name a
// queue), a running pod ends and the waiting one stays gated (nobody admits it),
// removing the gate by hand is refused; CPU pods still run. Kueue is started
// again afterwards.
func TestQuotaCeilingHoldsWhileKueueIsDown(t *testing.T) {
	ctx := integration(t)
	createTeam(ctx, t, testobj.Team("steady", "h100").GPUs(2).Queued().MaxQueued(2).Obj())
	waitActive(ctx, t, "steady")
	dumpWorkloadsOnFailure(t, gpuvcv1.HostNamespace("steady"))
	gpuPods(ctx, t, "steady", "s", 3)
	waitPods(ctx, t, "steady", 2, 1)
	if err := kueue.Stop(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		k, err := startKueue(ctx, nil)
		if err != nil {
			t.Errorf("restarting Kueue: %v", err)
			return
		}
		kueue = k
	})
	ns := gpuvcv1.HostNamespace("steady")
	_, err := host.Client.CoreV1().Pods(ns).Create(ctx, testobj.Pod("gpu", ns).GPUs("1").Obj(), metav1.CreateOptions{})
	if err == nil || !strings.Contains(err.Error(), "failed calling webhook") {
		t.Fatalf("a GPU pod was admitted while Kueue is down (or refused for another reason): %v", err)
	}

	// A GPU frees up; with Kueue down nothing admits the waiting pod. The
	// manager's ClusterQueue watch is not involved: the gate alone holds it.
	waiting := waitingPod(ctx, t, "steady")
	complete(ctx, t, "steady", runningPod(ctx, t, "steady"))
	if _, err := ungate(ctx, host.Client, ns, waiting, "", false); err == nil || !strings.Contains(err.Error(), "only Kueue lifts it") {
		t.Fatalf("removing Kueue's gate by hand while Kueue is down: %v; want a refusal", err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		p, err := host.Client.CoreV1().Pods(ns).Get(ctx, waiting, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !gated(p) || p.Spec.NodeName != "" {
			t.Fatalf("with Kueue down, waiting pod %s was admitted: %s", waiting, poll.DescribePod(p))
		}
		time.Sleep(time.Second)
	}

	cpu, err := host.Client.CoreV1().Pods(ns).Create(ctx, testobj.Pod("cpu", ns).Obj(), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("a CPU pod, which does not queue, was refused while Kueue is down: %v", err)
	}
	if gated(cpu) {
		t.Fatalf("a CPU pod was gated: %s", poll.DescribePod(cpu))
	}
}
